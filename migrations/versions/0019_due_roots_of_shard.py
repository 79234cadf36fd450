"""due_roots_of_shard: the polite claim's walk of one shard group's due roots

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02 22:50:00

On a Citus cluster the polite claim walked the due roots of every shard (a multi-shard
read per claim). This function walks one shard's: `crawler.db.server.cluster.distribute` makes
it a distributed function co-located with `roots` by its `anchor` argument, so Citus
delegates a call to the worker holding the anchor's shard, where the body reads that
shard's relation (`roots_<shardid>`) directly. Called on a node that does not hold the
shard (a call Citus did not delegate) it raises rather than read the wrong rows. On one
server (no citus) it reads `roots`; nothing calls it there (the claim walks and locks in
one statement, crawler.db.crawl.claims.WALK_AND_LOCK).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DUE_ROOTS_OF_SHARD = """
CREATE OR REPLACE FUNCTION due_roots_of_shard(anchor varchar, concurrency int, walk int)
RETURNS TABLE (root varchar, most int)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    relation text := 'roots';
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        EXECUTE 'SELECT shard_name(''roots'', get_shard_id_for_distribution_column(''roots'', $1))'
           INTO relation USING anchor;
        IF to_regclass(relation) IS NULL THEN
            RAISE EXCEPTION 'due_roots_of_shard(%): shard % is not on this node', anchor, relation;
        END IF;
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT r.root::varchar, least(r.hosts, $1)::int FROM %s r
          WHERE r.next_due_at <= now() AND (r.held_until IS NULL OR r.held_until <= now())
          ORDER BY r.next_due_at LIMIT $2', relation)
        USING concurrency, walk;
END
$fn$
"""


def upgrade() -> None:
    op.execute(DUE_ROOTS_OF_SHARD)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS due_roots_of_shard(varchar, int, int)")
