"""source_hours: hosts discovered per hour and source group; the hidden rows' sample index

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02 19:30:00

"Found in the last 24 hours, by source" counted the hosts discovered in a day on every
refresh: at 10M hosts a parallel scan of a third of a million rows (bench/growth.py).
The writers that insert hosts now add their discoveries to one row per hour, writer
shard and source group (crawler.db.crawl.rollups.count_sources, in their own transaction, as
host_hours), so the strip reads at most 24 x shards x groups rows. '' is no source: a
seed, a deny entry's own row, a host older than the source column.

ix_queue_hidden_sample orders the hidden rows (deny entries and the rows they took out
of routing) by a hash of the name: the dashboard counts them, and their entries by
rule, in one index-only scan, and reads the facts of a fixed-size sample of them
(webpanel.queries.hidden) instead of every one. ix_queue_entry_rule counts the deny
entries by rule index-only (a count over the hidden rows' heap pages was tens of ms).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HIDDEN = "status_reason IS NOT NULL OR denied_by IS NOT NULL"
BACKFILL = """
    INSERT INTO source_hours (hour, shard, source, discovered)
    SELECT date_trunc('hour', discovered_at, 'UTC'), 0, coalesce(found_source, ''), count(*)
      FROM hosts WHERE discovered_at IS NOT NULL
     GROUP BY 1, 3
"""


def upgrade() -> None:
    op.create_table(
        "source_hours",
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("shard", sa.SmallInteger(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("discovered", sa.Integer(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("hour", "shard", "source", name="pk_source_hours"),
    )
    op.execute(BACKFILL)
    op.create_index(
        "ix_queue_entry_rule",
        "queue",
        ["status_reason"],
        postgresql_where=sa.text("status_reason IS NOT NULL"),
    )
    op.execute(
        "CREATE INDEX ix_queue_hidden_sample ON queue"
        " ((hashtext(hostname::text) & 65535), hostname, root, status_reason)"
        f" WHERE {HIDDEN}"
    )


def downgrade() -> None:
    op.drop_index("ix_queue_hidden_sample", table_name="queue")
    op.drop_index("ix_queue_entry_rule", table_name="queue")
    op.drop_table("source_hours")
