"""One schema, two deployments: a plain Postgres, or a Citus cluster sharded by root.

On a database where the `citus` extension exists and workers are added, `hostcrawl db
upgrade` distributes every table kept per root by `root`, co-located with `roots`: a
root's hosts (their queue rows in them), window, claims, deferral, wildcard probe and dropped links
live in one shard group, so every statement about one host goes to one worker. The small
shared tables (users, login failures, the change log, world silences, the hourly and
per-minute figures) stay plain tables on the coordinator: nothing joins them to the
per-root tables. On a plain Postgres nothing changes. Distributing is idempotent: a table
already distributed is left as it is.

Here: what the database is (`topology`), where a root's shard is, and the distributing.
What the code does differently on each is crawler.db.deployments'.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from sqlalchemy import Connection, Engine, text

from crawler.core.words import counted
from crawler.db.server.sql_pieces import names_param

DISTRIBUTION_COLUMN = "root"
# Distributed in this order: roots first (the others co-locate with it). The queue is
# columns of hosts (0030), and its view a view.
PER_ROOT_TABLES = (
    "roots",
    "hosts",
    "trap_window",
    "root_claims",
    "trap_deferrals",
    "wildcard_probes",
    "dropped_links",
)

CITUS_INSTALLED = text("SELECT extversion FROM pg_extension WHERE extname = 'citus'")
WORKERS = text("SELECT count(*) FROM citus_get_active_worker_nodes()")
DISTRIBUTED = text(
    "SELECT logicalrelid::regclass::text FROM pg_dist_partition"
    " WHERE logicalrelid::regclass::text = ANY(:tables)"
)
DISTRIBUTE = text(
    "SELECT create_distributed_table(:table, :column, colocate_with => :colocate_with)"
)


@dataclass(frozen=True)
class Topology:
    """Which kind of database this is: plain Postgres, or Citus with its workers."""

    citus_version: str | None = None
    workers: int = 0
    distributed: tuple[str, ...] = ()

    @property
    def is_cluster(self) -> bool:
        return self.citus_version is not None and self.workers > 0

    def describe(self) -> str:
        if self.citus_version is None:
            return "one Postgres server (no citus extension)"
        if not self.is_cluster:
            return f"Citus {self.citus_version} with no worker added: one server, not distributed"
        tables = len(self.distributed)
        return (
            f"a Citus {self.citus_version} cluster of {counted(self.workers, 'worker')};"
            f" {tables} of {len(PER_ROOT_TABLES)} per-root tables distributed by"
            f" {DISTRIBUTION_COLUMN}"
        )


def topology(conn: Connection) -> Topology:
    """What the database behind `conn` is."""
    version = conn.execute(CITUS_INSTALLED).scalar()
    if version is None:
        return Topology()
    workers = conn.execute(WORKERS).scalar_one()
    done = conn.execute(DISTRIBUTED, {"tables": list(PER_ROOT_TABLES)}).scalars()
    order = {table: i for i, table in enumerate(PER_ROOT_TABLES)}
    return Topology(version, workers, tuple(sorted(done, key=order.__getitem__)))


SHARDS_OF = text(
    "SELECT r, get_shard_id_for_distribution_column('roots', r) FROM unnest(:roots) AS r"
).bindparams(*names_param("roots"))


# Per database URL: (when asked, {root: its shard id}). A root's shard changes only with
# the shard count (a rebalance moves shards, not ids): asked again after SHARD_TTL.
SHARD_TTL = 60.0
SHARDS_KEPT = 200_000  # roots remembered per database, then forgotten all at once
_SHARDS: dict[str, tuple[float, dict[str, int]]] = {}


def shard_ids(conn: Connection, roots: set[str]) -> dict[str, int]:
    """{root: its shard id} on a cluster, asked of the database for the roots not known."""
    url = conn.engine.url.render_as_string(hide_password=False)
    since, known = _SHARDS.get(url, (0.0, {}))
    if time.monotonic() - since > SHARD_TTL or len(known) > SHARDS_KEPT:
        since, known = time.monotonic(), {}
        _SHARDS[url] = (since, known)
    if missing := roots - known.keys():
        known.update(conn.execute(SHARDS_OF, {"roots": sorted(missing)}).all())
    return {root: known[root] for root in roots}


def distribute(engine: Engine) -> Topology:
    """On a Citus cluster, distribute each per-root table not yet distributed; what it is."""
    with engine.begin() as conn:
        found = topology(conn)
        if not found.is_cluster:
            return found
        for table in PER_ROOT_TABLES:
            if table not in found.distributed:
                colocate = "none" if table == PER_ROOT_TABLES[0] else PER_ROOT_TABLES[0]
                params = {"table": table, "column": DISTRIBUTION_COLUMN, "colocate_with": colocate}
                conn.execute(DISTRIBUTE, params)
    # Apart: Citus distributes a function only over one connection per worker, and the
    # tables' distribution above used several.
    with engine.begin() as conn:
        distribute_functions(conn)
        return topology(conn)


# Functions Citus delegates to the worker holding the shard of their distribution
# argument (crawler/db/functions), co-located with `roots`. force_delegation: the claim calls
# them inside its transaction, where Citus would otherwise run them on the coordinator.
SHARD_FUNCTIONS = {"claim_in_shard(varchar,int,int,int,int,int,int,interval,varchar)": "anchor"}
FUNCTION_DISTRIBUTED = text(
    "SELECT EXISTS (SELECT 1 FROM pg_dist_object WHERE objid = to_regprocedure(:function)::oid"
    " AND distribution_argument_index IS NOT NULL)"
)
DISTRIBUTE_FUNCTION = text(
    "SELECT create_distributed_function(:function, :argument, colocate_with => 'roots',"
    " force_delegation => true)"
)


def distribute_functions(conn: Connection) -> None:
    """Each shard function not yet distributed, distributed (idempotent)."""
    for function, argument in SHARD_FUNCTIONS.items():
        if not conn.execute(FUNCTION_DISTRIBUTED, {"function": function}).scalar_one():
            conn.execute(DISTRIBUTE_FUNCTION, {"function": function, "argument": argument})


# Each shard's planner statistics of a column: Citus keeps none for the coordinator's shell
# table (its pg_class says 0 rows, its pg_stats nothing). `%s` is each shard's name.
SHARD_COLUMN_STATISTICS = """
    SELECT result FROM run_command_on_shards(:table, $$
        SELECT json_build_object('rows', c.reltuples, 'null_frac', s.null_frac,
                                 'vals', s.most_common_vals::text::text[],
                                 'freqs', s.most_common_freqs)
          FROM pg_class c JOIN pg_stats s ON s.schemaname = c.relnamespace::regnamespace::text
                                        AND s.tablename = c.relname
         WHERE c.oid = '%s'::regclass AND s.attname = '{column}'$$)
     WHERE success AND result <> ''
"""


# Per engine, table and column: (when read, the shares). Citus runs a command on the
# shards over connections of its own (tens of ms), and the statistics change only when
# autovacuum analyzes a shard: read at most once a STATISTICS_TTL.
STATISTICS_TTL = 60.0  # seconds
_SHARES: WeakKeyDictionary[Engine, dict[tuple[str, str], tuple[float, list]]]
_SHARES = WeakKeyDictionary()


def shard_value_shares(conn: Connection, table: str, column: str) -> list[tuple[str | None, float]]:
    """The column's most common values (None: NULL) and their shares of the table's rows,
    from every shard's statistics, each weighed by its rows (read again after
    STATISTICS_TTL)."""
    read = _SHARES.setdefault(conn.engine, {})
    since, shares = read.get((table, column), (0.0, []))
    if time.monotonic() - since > STATISTICS_TTL:
        shares = _read_value_shares(conn, table, column)
        read[table, column] = (time.monotonic(), shares)
    return shares


def _read_value_shares(conn: Connection, table: str, column: str) -> list:
    if not column.isidentifier():
        raise ValueError(f"{column!r}: not a column name")
    statement = text(SHARD_COLUMN_STATISTICS.format(column=column))
    shards = [json.loads(r) for r in conn.execute(statement, {"table": table}).scalars()]
    total = sum(max(shard["rows"], 0) for shard in shards)
    if total <= 0:
        return []
    rows: dict[str | None, float] = {}
    for shard in shards:
        pairs = [
            (None, shard["null_frac"]),
            *zip(shard["vals"] or [], shard["freqs"] or [], strict=True),
        ]
        for value, share in pairs:
            rows[value] = rows.get(value, 0.0) + share * max(shard["rows"], 0)
    return [(value, n / total) for value, n in rows.items()]


def planned_rows(plan: dict) -> int:
    """The rows a distributed statement's EXPLAIN (FORMAT JSON) expects: Citus shows one
    task's plan (one shard's rows) and a fixed 100,000 above it, so one task's rows times
    the tasks. A statement Citus runs on the coordinator alone has no tasks."""
    top = plan["Plan"]
    job = top.get("Distributed Query", {}).get("Job")
    if not job or not job.get("Tasks"):
        return int(top["Plan Rows"])
    task_plan = job["Tasks"][0]["Remote Plan"][0][0]["Plan"]
    return int(task_plan["Plan Rows"]) * int(job["Task Count"])
