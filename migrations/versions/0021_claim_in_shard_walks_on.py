"""claim_in_shard walks on: page after page of the group's due roots until the batch has room

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03 15:00:00

A root at its concurrency keeps its place at the front of the walk while it has hosts
due, so a crawl's running claims can fill the walk's one page with roots that have no
room, and the claim came back empty with hosts due behind them (on one server, a claim
of 10 behind 60 such roots). The function now walks a page (`walk` roots), locks, and
walks on from where the page ended, each page twice the last, until the locked roots
have room for `n` hosts, the group's due roots are done, or it has passed `walk_most`
roots; then the claim, as before. The lock's statement returns the locked roots' room
beside them; a root the walk meets twice (it moved while the claim walked) is locked once.
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_SIGNATURE = (
    "claim_in_shard(varchar, text, text, text, int, int, int, int, int, interval, varchar)"
)
SIGNATURE = (
    "claim_in_shard(varchar, text, text, text, int, int, int, int, int, int, interval, varchar)"
)
CLAIM_IN_SHARD = """
CREATE OR REPLACE FUNCTION claim_in_shard(
    anchor varchar, walk_sql text, lock_sql text, claim_sql text, n int, walk int,
    walk_most int, concurrency int, budget int, lock_space int, lease interval,
    worker varchar)
RETURNS TABLE (kind text, name varchar)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    relation text;
    shard text;
    due varchar[];
    most int[];
    page int := walk;
    skip int := 0;
    page_locked varchar[];
    page_room int;
    locked varchar[] := '{}';
    room int := 0;
BEGIN
    FOREACH relation IN ARRAY ARRAY['roots', 'queue', 'root_claims'] LOOP
        shard := relation;
        IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
            -- Planned at its first run only, so one server (no citus) never parses it.
            shard := shard_name(relation::regclass,
                                get_shard_id_for_distribution_column(relation, anchor));
            IF to_regclass(shard) IS NULL THEN
                RAISE EXCEPTION 'claim_in_shard(%): shard % is not on this node', anchor, shard;
            END IF;
        END IF;
        walk_sql := replace(walk_sql, '{' || relation || '}', shard);
        lock_sql := replace(lock_sql, '{' || relation || '}', shard);
        claim_sql := replace(claim_sql, '{' || relation || '}', shard);
    END LOOP;
    LOOP
        EXECUTE format('EXECUTE %I(%s, %s, %s)',
                       claim_in_shard_prepared(walk_sql, 'int, int, int'),
                       concurrency, page, skip)
           INTO due, most;
        EXIT WHEN due IS NULL;  -- the group's due roots are done
        EXECUTE format('EXECUTE %I(%L, %L, %s, %s, %s)',
                       claim_in_shard_prepared(lock_sql, 'varchar[], int[], int, int, int'),
                       due, most, concurrency, lock_space, n - room)
           INTO page_locked, page_room;
        locked := locked || ARRAY(SELECT r FROM unnest(page_locked) AS r
                                   WHERE r <> ALL(locked));
        room := room + coalesce(page_room, 0);
        skip := skip + page;
        EXIT WHEN room >= n OR cardinality(due) < page OR skip >= walk_most;
        page := page * 2;
    END LOOP;
    IF cardinality(locked) = 0 THEN
        RETURN;  -- every due root held by another claim or at its concurrency
    END IF;
    RETURN QUERY EXECUTE format(
        'EXECUTE %I(%L, %s, %s, %s, %L, %L)',
        claim_in_shard_prepared(claim_sql, 'varchar[], int, int, int, interval, varchar'),
        locked, concurrency, budget, n, lease, worker);
END
$fn$
"""


def upgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {OLD_SIGNATURE}")
    op.execute(CLAIM_IN_SHARD)


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {SIGNATURE}")
    op.execute(_revision_0020().CLAIM_IN_SHARD)


def _revision_0020():
    """Migration 0020's module (its name starts with a digit: loaded by path)."""
    path = Path(__file__).with_name("0020_claim_in_shard.py")
    spec = importlib.util.spec_from_file_location("revision_0020", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
