"""One claim's locks are bounded by its batch, whatever plan the statistics give.

A claim used to try an advisory lock on every due root before the sort and the LIMIT
when the planner flattened its walk (fresh statistics after a bulk seed): one lock per
due root, and "out of shared memory" past max_locks_per_transaction x connections.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import text

from crawler.db.crawl import claims, queue
from crawler.db.crawl.claims import RootLimits

DUE_ROOTS = 20_000
BATCH = 256  # the spider's largest claim: MAX_CLAIM_BATCHES x CLAIM_BATCH
# A relation lock per table and index the claim touches: never more than the schema has.
SCHEMA_RELATIONS = text(
    "SELECT count(*) FROM pg_class"
    " WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'i')"
)
# The schema's relations only: the first claim of a process also reads pg_extension
# (whether the database is a cluster, asked once), whose catalog locks are no root's.
# One a relation or advisory key, whatever its modes (hosts is read, locked FOR UPDATE and
# updated: three modes, one relation).
OWN_LOCKS = text(
    "SELECT l.locktype FROM (SELECT DISTINCT locktype, relation, classid, objid, objsubid"
    "                          FROM pg_locks WHERE pid = pg_backend_pid() AND granted) l"
    " LEFT JOIN pg_class c ON c.oid = l.relation"
    " WHERE l.locktype = 'advisory'"
    " OR (l.locktype = 'relation' AND c.relnamespace = 'public'::regnamespace)"
)


def analyze(db) -> None:
    with db.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE hosts, roots"))


def seed_distinct_roots(db, n: int) -> None:
    """n due hosts, each its own registered domain (a top-sites list)."""
    names = [f"site{i:05}.test" for i in range(n)]
    for start in range(0, n, 5_000):
        queue.save_hosts(db, names[start : start + 5_000])


@pytest.mark.parametrize("statistics", ["none", "stale", "fresh"])
def test_one_claim_locks_at_most_its_batch_on_20000_due_roots(db, statistics):
    # none: the tables were just emptied (TRUNCATE forgets their statistics), as a new
    # database is before autovacuum; stale: analyzed empty, then seeded.
    if statistics == "stale":
        analyze(db)
    seed_distinct_roots(db, DUE_ROOTS)
    if statistics == "fresh":
        analyze(db)  # the planner knows 20,000 roots are due: the plan that used to flatten

    with db.begin() as conn:
        claim = claims.claim_polite_in(conn, BATCH, "w1", timedelta(minutes=10), RootLimits())
        held = Counter(conn.execute(OWN_LOCKS).scalars())

    assert len(claim.hosts) == BATCH
    assert held["advisory"] <= BATCH
    with db.connect() as conn:
        assert held["relation"] <= conn.execute(SCHEMA_RELATIONS).scalar_one()


def test_a_claim_walks_past_roots_held_by_another_claim(db):
    """Two claims at once take different roots: the second walks past the first's locks."""
    seed_distinct_roots(db, 200)
    analyze(db)
    lease = timedelta(minutes=10)
    with db.begin() as first:
        taken = claims.claim_polite_in(first, 40, "w1", lease, RootLimits()).hosts
        with db.begin() as second:
            also = claims.claim_polite_in(second, 40, "w2", lease, RootLimits()).hosts
    assert len(taken) == len(also) == 40
    assert not set(taken) & set(also)
