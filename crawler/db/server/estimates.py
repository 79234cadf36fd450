"""Counts that stay cheap on a big database: counted while hosts is small, the planner's
estimate past EXACT_BELOW rows. The panel's figures and `make run`'s console share them.

A count(*) over 10M rows takes seconds and reads the whole table on every refresh.
Counters kept on every write would be exact, but every finish of every worker would then
update the same few counter rows (a hot spot that serializes the workers). The planner's
statistics cost nothing to read and autovacuum keeps them fresh (migration 0007 analyzes
at 2% changed rows), so past EXACT_BELOW rows the figures are the planner's, marked "≈".
"""

from __future__ import annotations

from sqlalchemy import text

from crawler.db.deployments import deployment_of

EXACT_BELOW = 200_000
# Hosts due now that the list would show (no entry took them out of routing).
DUE = (
    "SELECT 1 FROM hosts WHERE status_reason IS NULL AND denied_by IS NULL"
    " AND next_claim_at <= now()"
)
HOSTS = "SELECT 1 FROM hosts"


def row_estimate(conn, query: str) -> int:
    """The planner's row estimate for `query` (EXPLAIN without running it; on a cluster
    over every shard)."""
    plan = conn.execute(text(f"EXPLAIN (FORMAT JSON) {query}")).scalar_one()
    return deployment_of(conn).planned_rows(plan[0])


def hosts_estimate(conn) -> int:
    """Rows in hosts now, as the planner reckons them (its tuples per page times the
    pages now; a table never analyzed is taken at a few pages: counted)."""
    return row_estimate(conn, HOSTS)


def count_rows(conn, query: str) -> tuple[int, bool]:
    """(rows of `query`, estimated?): counted below EXACT_BELOW hosts, else the planner's."""
    if hosts_estimate(conn) < EXACT_BELOW:
        return conn.execute(text(f"SELECT count(*) FROM ({query}) AS d")).scalar_one(), False
    return row_estimate(conn, query), True
