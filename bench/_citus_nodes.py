"""bench/citus.py's two deployments, given the same room, and Citus's count of the
statements it ran on one shard or on many.

One server: the embedded Postgres (bench/_common.start_database). The cluster: a
coordinator and two workers on 127.0.0.1 (tests/citus_cluster.py), migrated and
distributed by `upgrade_to_head()` as `hostcrawl db upgrade` does. Both get the test
cluster's durability settings (fsync and synchronous commit off: a throwaway database),
and the same memory in all: each node of the cluster NODE_BUFFERS of shared_buffers, the
one server as much as the three together.
"""

from __future__ import annotations

import atexit
import os
import re
from collections import Counter
from pathlib import Path

from _common import start_database
from sqlalchemy import create_engine, text

PROJECT_ROOT = Path(__file__).resolve().parents[1]
NODE_BUFFERS_MB = 256
# The test cluster's (tests/citus_cluster.SETTINGS): nothing is kept after the run.
DURABILITY = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
PER_ROOT_TABLES = ("roots", "hosts", "queue", "trap_window")  # the ones with many rows


def start_one_server(nodes: int) -> str:
    """The embedded server with as much shared_buffers as the cluster's `nodes` together."""
    room = {"shared_buffers": f"{NODE_BUFFERS_MB * nodes}MB", **DURABILITY}
    return start_database("hostcrawl-bench-citus-", server=room)


def start_cluster():
    """A started, migrated and distributed cluster (stopped and deleted at exit)."""
    from crawler.db.migrate import upgrade_to_head
    from tests.citus_cluster import CitusCluster

    cluster = CitusCluster().start()
    atexit.register(cluster.stop)
    for node in cluster.nodes:
        node.execute(f"ALTER SYSTEM SET shared_buffers = '{NODE_BUFFERS_MB}MB'")
    # shared_buffers needs a restart: the coordinator goes first and comes back last, so
    # it never holds connections to a worker that is down.
    cluster.coordinator.stop()
    for worker in cluster.workers:
        worker.stop()
        worker.start()
    cluster.coordinator.start()
    previous = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = cluster.url
    deployment = upgrade_to_head()
    if previous is not None:
        os.environ["DATABASE_URL"] = previous
    assert deployment.is_cluster, deployment.describe()
    print(f"# cluster: {deployment.describe()}")
    return cluster


def vacuum_everywhere(engine, cluster=None) -> None:
    """VACUUM ANALYZE of the per-root tables by name (a bare VACUUM on a Citus coordinator
    reaches only its own tables), then a CHECKPOINT on every server."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"VACUUM ANALYZE {', '.join(PER_ROOT_TABLES)}"))
        if cluster is None:
            conn.execute(text("CHECKPOINT"))
    for node in cluster.nodes if cluster else ():
        node.execute("CHECKPOINT")


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
