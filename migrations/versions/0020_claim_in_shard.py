"""claim_in_shard: the polite claim's walk, lock and claim of one shard group, in one call

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03 07:20:00

On a Citus cluster the claim was three statements: the walk (due_roots_of_shard, a
delegated call), the lock and the claim, each routed to the worker of one shard group.
Citus plans the claim itself (one statement of modifying CTEs) as eight distributed
subplans, each a round trip with its intermediate results shipped through the
coordinator: 27 ms of a 38 ms claim, against 6 ms for the same statement on one server.
This function runs the three on the worker: `crawler.db.cluster.distribute` makes it a
distributed function co-located with `roots` by its `anchor` argument, so Citus
delegates a call to the worker holding the anchor's shard, where the statements read and
write that shard group's relations (`{roots}`, `{queue}` and `{root_claims}` in their
text become `roots_<shardid>`...) as plain Postgres: one round trip a claim.

The statements come from the caller (crawler.db.claims_cluster), written once there
and, for the claim, shared with one server: the function only names the relations and
passes each statement's result to the next.
Called on a node that does not hold the shard (a call Citus did not delegate) it raises
rather than touch the wrong rows. It replaces due_roots_of_shard.
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Each statement is prepared once per session on the worker (Citus keeps its connections
# to the workers open), named by a hash of its text with the shard's names in it, and
# run with its generic plan from the first call (each group's statements are its own,
# so the default's five custom plans would be five per group): EXECUTE of a dynamic text
# plans it anew each time, and planning the claim took longer than running it. The
# arguments go in as literals of the prepared statement's declared types.
# A session setting (hostcrawl.<name>) remembers that a statement is prepared: reading
# pg_prepared_statements builds a row, its text included, for every statement the session
# has. A setting made in a transaction that then aborts is undone while PREPARE is not,
# so a miss looks at the view before it prepares.
PREPARED = """
CREATE OR REPLACE FUNCTION claim_in_shard_prepared(statement text, types text)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    prepared text := 'claim_in_shard_' || md5(statement);
BEGIN
    IF coalesce(current_setting('hostcrawl.' || prepared, true), '') = '' THEN
        IF NOT EXISTS (SELECT 1 FROM pg_prepared_statements p WHERE p.name = prepared) THEN
            EXECUTE format('PREPARE %I(%s) AS %s', prepared, types, statement);
        END IF;
        PERFORM set_config('hostcrawl.' || prepared, 'prepared', false);
    END IF;
    RETURN prepared;
END
$fn$
"""
CLAIM_IN_SHARD = """
CREATE OR REPLACE FUNCTION claim_in_shard(
    anchor varchar, walk_sql text, lock_sql text, claim_sql text, n int, walk int,
    concurrency int, budget int, lock_space int, lease interval, worker varchar)
RETURNS TABLE (kind text, name varchar)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    relation text;
    shard text;
    due varchar[];
    most int[];
    locked varchar[];
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
    EXECUTE format('EXECUTE %I(%s, %s)', claim_in_shard_prepared(walk_sql, 'int, int'),
                   concurrency, walk)
       INTO due, most;
    IF due IS NULL THEN
        RETURN;  -- nothing due in this shard group
    END IF;
    EXECUTE format('EXECUTE %I(%L, %L, %s, %s, %s)',
                   claim_in_shard_prepared(lock_sql, 'varchar[], int[], int, int, int'),
                   due, most, concurrency, lock_space, n)
       INTO locked;
    IF locked IS NULL THEN
        RETURN;  -- every due root held by another claim or at its concurrency
    END IF;
    RETURN QUERY EXECUTE format(
        'EXECUTE %I(%L, %s, %s, %s, %L, %L)',
        claim_in_shard_prepared(claim_sql, 'varchar[], int, int, int, interval, varchar'),
        locked, concurrency, budget, n, lease, worker);
END
$fn$
"""
SIGNATURE = "claim_in_shard(varchar, text, text, text, int, int, int, int, int, interval, varchar)"


def upgrade() -> None:
    op.execute(PREPARED)
    op.execute(CLAIM_IN_SHARD)
    op.execute("DROP FUNCTION IF EXISTS due_roots_of_shard(varchar, int, int)")


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {SIGNATURE}")
    op.execute("DROP FUNCTION IF EXISTS claim_in_shard_prepared(text, text)")
    op.execute(_revision_0019().DUE_ROOTS_OF_SHARD)


def _revision_0019():
    """Migration 0019's module (its name starts with a digit: loaded by path)."""
    path = Path(__file__).with_name("0019_due_roots_of_shard.py")
    spec = importlib.util.spec_from_file_location("revision_0019", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
