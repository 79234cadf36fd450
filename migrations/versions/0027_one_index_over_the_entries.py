"""one index over the deny entries: ix_queue_entries includes the rule; ix_queue_entry_rule goes

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-05 02:00:00

The deny test probes ix_queue_entries for each parent of a listed name
(crawler.db.deployments.one_server.visible). With statistics that predate a big block
list, the planner believes both partial indexes over the entries empty and costs a probe
of either the same; it took ix_queue_entry_rule (0018), keyed by the rule, and read every
entry on each probe: the export ran at a minute a fetch (bench/_stale_statistics.py).
ix_queue_entries now includes the rule, so the dashboard still counts the entries by
rule from one index only, and is the one index over the entries alone.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ENTRIES_ONLY = sa.text("status_reason IS NOT NULL")


def upgrade() -> None:
    op.drop_index("ix_queue_entry_rule", table_name="queue")
    op.drop_index("ix_queue_entries", table_name="queue")
    op.create_index(
        "ix_queue_entries",
        "queue",
        ["hostname"],
        postgresql_include=["status_reason"],
        postgresql_where=ENTRIES_ONLY,
    )


def downgrade() -> None:
    op.drop_index("ix_queue_entries", table_name="queue")
    op.create_index("ix_queue_entries", "queue", ["hostname"], postgresql_where=ENTRIES_ONLY)
    op.create_index(
        "ix_queue_entry_rule", "queue", ["status_reason"], postgresql_where=ENTRIES_ONLY
    )
