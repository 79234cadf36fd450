"""Planner statistics after a bulk write: the tables it changed a large share of are
analyzed at once, not whenever autovacuum next looks (up to a minute later, or never
while it is off).

A plan chosen from statistics taken before a 100,000-line block list believed the
entries few; every query planned before the next ANALYZE paid for it. The queries
the export and the main list run do not depend on fresh statistics (their deny test
can only probe by index: each deployment's `visible`, crawler.db.deployments); the rest
of the database's queries get statistics that describe the tables again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

from sqlalchemy import Connection, Engine, text

from crawler.db.server import cluster
from crawler.db.server.sql_pieces import names_param

T = TypeVar("T")

# A table is analyzed once this share of its rows changed since its last ANALYZE, and
# at least MIN_CHANGED rows (a small table is cheap to plan either way).
LARGE_SHARE = 0.1
MIN_CHANGED = 1_000
BULK_TABLES = ("hosts",)

# Rows and changes since the last ANALYZE, as the statistics system last heard them:
# a backend reports its writes within a second or so of committing them.
CHANGED = text(
    """
    SELECT c.relname AS name, greatest(c.reltuples, 0) AS rows,
           coalesce(s.n_mod_since_analyze, 0) AS changed
      FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
     WHERE c.relname = ANY(:tables) AND c.relnamespace = current_schema()::regnamespace
    """
).bindparams(*names_param("tables"))


# The rows the planner believes a table holds. On a Citus cluster the coordinator's table
# is an empty shell: the planners that matter are the workers', each with its shards'.
BELIEVED = text("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = CAST(:t AS regclass)")
BELIEVED_ON_SHARDS = text(
    "SELECT sum(greatest(result::float, 0)) FROM run_command_on_shards(:t,"
    " $$SELECT reltuples FROM pg_class WHERE oid = '%s'::regclass$$)"
)


def believed_rows(conn: Connection, table: str) -> float:
    """How many rows the planner believes `table` holds (its shards' sum on a cluster):
    what a plan is made from, however many rows are there."""
    on_shards = cluster.topology(conn).is_cluster
    return conn.execute(BELIEVED_ON_SHARDS if on_shards else BELIEVED, {"t": table}).scalar_one()


def stale_tables(engine: Engine, written: int, tables: Sequence[str] = BULK_TABLES) -> list[str]:
    """The `tables` whose changes since their last ANALYZE, plus `written` rows just
    committed (maybe not reported yet), are a large share of them."""
    with engine.connect() as conn:
        rows = conn.execute(CHANGED, {"tables": list(tables)}).all()
    return [r.name for r in rows if large_share(r.changed + written, r.rows)]


def large_share(changed: float, rows: float) -> bool:
    """Whether `changed` rows are enough of a table of `rows` to analyze it now."""
    return changed >= max(MIN_CHANGED, LARGE_SHARE * rows)


def analyze_after_bulk_write(
    engine: Engine, written: int, tables: Sequence[str] = BULK_TABLES
) -> list[str]:
    """ANALYZE each of `tables` a bulk write left with stale statistics; the ones analyzed.

    SKIP_LOCKED: a table another session is analyzing or vacuuming is left to it.
    """
    stale = stale_tables(engine, written, tables)
    if stale:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"ANALYZE (SKIP_LOCKED) {', '.join(stale)}"))
    return stale


def analyzes_after(write: Callable[..., T]) -> Callable[..., T]:
    """Decorate a bulk write `write(engine, batch, ...)` (crawler.db.operators.bulk: `batch.first`
    holds the names it wrote): once it has committed, its tables' statistics are kept
    current. Outside any retry of the write, so a write is never run twice for it."""

    @functools.wraps(write)
    def run(engine: Engine, batch, *args, **kwargs) -> T:
        result = write(engine, batch, *args, **kwargs)
        analyze_after_bulk_write(engine, len(batch.first))
        return result

    return run
