"""bench/citus.py's two deployments, given the same room; the CPU their servers spend;
Citus's count of the statements it ran on one shard or on many.

Both are PostgreSQL 16 of the same binaries (the embedded server's `pginstall`, which
`make citus` builds the extension into), initdb'd by tests/citus_cluster.py with its
settings (durability off: a throwaway database). The cluster: a coordinator and two
workers, Citus loaded. One server: one node of the same kind without Citus (the embedded
server the other benchmarks use is another major version). Memory: each node of the
cluster NODE_BUFFERS_MB of shared_buffers, the one server as much as the three together.
Both migrated by `upgrade_to_head()`, which distributes the per-root tables on the cluster.
"""

from __future__ import annotations

import atexit
import os
import re
from collections import Counter
from pathlib import Path

from sqlalchemy import create_engine, text

PROJECT_ROOT = Path(__file__).resolve().parents[1]
NODE_BUFFERS_MB = 256
PER_ROOT_TABLES = ("roots", "hosts", "trap_window")  # the ones with many rows
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def migrate(url: str):
    """`hostcrawl db upgrade`'s work on the database at `url`; what it found there."""
    from crawler.db.server.migrate import upgrade_to_head

    previous = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = url
    try:
        return upgrade_to_head()
    finally:
        if previous is None:
            del os.environ["DATABASE_URL"]
        else:
            os.environ["DATABASE_URL"] = previous


def start_one_server(nodes: int):
    """One PostgreSQL 16 node without Citus, as much shared_buffers as `nodes` of the
    cluster's; migrated. Its `.coordinator` is the node (stopped and deleted at exit)."""
    from tests.citus_cluster import DATABASE, CitusCluster

    server = CitusCluster(workers=0)
    atexit.register(server.stop)
    server.prepare_base()
    node = server.coordinator
    node.initdb()
    with open(node.pgdata / "postgresql.conf", "a") as conf:  # later lines win
        conf.write(
            "# bench/_citus_nodes.py: one server, no Citus\nshared_preload_libraries = ''\n"
            f"shared_buffers = '{NODE_BUFFERS_MB * nodes}MB'\n"
        )
    node.start()
    server.started = True
    node.execute(f"CREATE DATABASE {DATABASE}", database="postgres")
    found = migrate(server.url)
    print(f"# one server: {found.describe()}, shared_buffers {NODE_BUFFERS_MB * nodes} MB")
    return server


def start_cluster(shards: int | None = None, buffers_mb: int = NODE_BUFFERS_MB):
    """A started, migrated and distributed cluster (stopped and deleted at exit); its
    tables in `shards` shards each (None: tests/citus_cluster.py's 8), `buffers_mb` of
    shared_buffers a node."""
    from tests.citus_cluster import CitusCluster

    cluster = CitusCluster().start()
    atexit.register(cluster.stop)
    for node in cluster.nodes:
        node.execute(f"ALTER SYSTEM SET shared_buffers = '{buffers_mb}MB'")
    if shards is not None:
        cluster.coordinator.execute(f"ALTER SYSTEM SET citus.shard_count = {int(shards)}")
    # shared_buffers needs a restart: the coordinator goes first and comes back last, so
    # it never holds connections to a worker that is down.
    cluster.coordinator.stop()
    for worker in cluster.workers:
        worker.stop()
        worker.start()
    cluster.coordinator.start()
    found = migrate(cluster.url)
    assert found.is_cluster, found.describe()
    print(f"# cluster: {found.describe()}, shared_buffers {buffers_mb} MB a node")
    return cluster


def vacuum_everywhere(engine, nodes) -> None:
    """VACUUM ANALYZE of the per-root tables by name (a bare VACUUM on a Citus coordinator
    reaches only its own tables), then a CHECKPOINT on every server."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"VACUUM ANALYZE {', '.join(PER_ROOT_TABLES)}"))
    for node in nodes:
        node.execute("CHECKPOINT")


# -- the CPU a server spends ------------------------------------------------------------


def _times(pid: int) -> tuple[int, list[int]]:
    """(parent pid, [utime, stime, cutime, cstime]) in clock ticks, from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return int(fields[1]), [int(f) for f in fields[11:15]]


def cpu_seconds(node) -> float:
    """CPU seconds of a server so far: its postmaster's own and its exited children's
    (which the postmaster reaped: backends, autovacuum), and its living children's."""
    postmaster = int((node.pgdata / "postmaster.pid").read_text().split()[0])
    ticks = sum(_times(postmaster)[1])
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != postmaster:
            try:
                parent, times = _times(int(entry))
            except (OSError, ValueError, IndexError):  # gone meanwhile
                continue
            if parent == postmaster:
                ticks += times[0] + times[1]
    return ticks / CLOCK_TICKS


# -- the rows on each worker --------------------------------------------------------------

ROWS_PER_WORKER = """
    SELECT p.nodeport, sum(r.result::bigint)
      FROM run_command_on_shards(:table, 'SELECT count(*) FROM %s') AS r
      JOIN pg_dist_shard_placement p USING (shardid)
     GROUP BY p.nodeport ORDER BY p.nodeport
"""


def rows_per_worker(cluster) -> dict[str, list[int]]:
    """{table: [rows on each worker]} for the per-root tables with many rows."""
    engine = create_engine(cluster.url, pool_size=1)
    with engine.connect() as conn:
        found = {
            table: [int(n) for _, n in conn.execute(text(ROWS_PER_WORKER), {"table": table})]
            for table in PER_ROOT_TABLES
        }
    engine.dispose()
    return found


# -- Citus's count of single-shard and multi-shard statements ---------------------------

# Citus counts each statement it executes as single- or multi-shard (citus_stat_counters,
# 13.1), by the same test (IsMultiTaskPlan) that its planner uses to log "multi-task query
# about to be executed" when citus.multi_task_query_log_level says so; with
# log_min_error_statement at 'log' the statement follows the message in the log. The
# prefix marks where each log entry starts (a statement spans lines).
COUNTING = {
    "citus.enable_stat_counters": "on",
    "citus.multi_task_query_log_level": "log",
    "log_min_error_statement": "log",
    "log_line_prefix": "'<<%%p>> '",  # %% for psycopg's placeholders
}
MULTI_TASK = "LOG:  multi-task query about to be executed"
ENTRY = re.compile(r"^<<\d+>> ", re.MULTILINE)
COUNTERS = text(
    "SELECT query_execution_single_shard, query_execution_multi_shard"
    " FROM citus_stat_counters WHERE name = current_database()"
)


class StatementCount:
    """Between start() and stop(): the coordinator's count of single- and multi-shard
    statements, and the multi-shard ones by their text (from its log)."""

    def __init__(self, cluster) -> None:
        self.coordinator = cluster.coordinator
        self.offset = 0

    def _configure(self, settings: dict[str, str], reset: bool) -> None:
        for name, value in settings.items():
            if reset:
                self.coordinator.execute(f"ALTER SYSTEM RESET {name}")
            else:
                self.coordinator.execute(f"ALTER SYSTEM SET {name} = {value}")
        self.coordinator.execute("SELECT pg_reload_conf()")

    def start(self) -> None:
        """Counting on (for sessions opened from now on), the counters at zero."""
        self._configure(COUNTING, reset=False)
        self.coordinator.execute("SELECT citus_stat_counters_reset()")
        self.offset = self.coordinator.log.stat().st_size

    def stop(self) -> tuple[int, int, Counter]:
        """(single-shard, multi-shard, multi-task plans by statement text); counting off."""
        single, multi = self.coordinator.execute(COUNTERS.text)[0]
        with open(self.coordinator.log, errors="replace") as log:
            log.seek(self.offset)
            written = log.read()
        self._configure(COUNTING, reset=True)
        return int(single), int(multi), multi_shard_statements(written)


def multi_shard_statements(log: str) -> Counter:
    """Multi-task plans by the statement that followed them in a backend's log, one line
    of text each (a statement with a subquery Citus plans apart can make two)."""
    marks = list(ENTRY.finditer(log))
    ends = [m.start() for m in marks[1:]] + [len(log)]
    pending: Counter = Counter()  # backend -> multi-task messages awaiting their statement
    statements: Counter = Counter()
    for mark, end in zip(marks, ends, strict=True):
        pid, entry = mark.group(0), log[mark.end() : end]
        if entry.startswith(MULTI_TASK):
            pending[pid] += 1
        elif entry.startswith("STATEMENT:") and pending[pid]:
            statements[" ".join(entry.removeprefix("STATEMENT:").split())] += pending.pop(pid)
    return statements
