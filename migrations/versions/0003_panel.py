"""panel: the host list's index

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 14:05:00

The panel's main list shows hosts in hostname order, never one under a deny
entry. Walking the primary key crosses every hidden row (a trap's junk names
often sort together: 100,000 of them made the first page take 250 ms at 1M
hosts); this partial index holds only the rows no entry took out of routing.
The list still applies the exact "no entry at or above it" test to each row.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SHOWN = "status_reason IS NULL AND denied_by IS NULL"


def upgrade() -> None:
    op.create_index(
        "ix_queue_shown",
        "queue",
        ["hostname"],
        unique=False,
        postgresql_where=sa.text(SHOWN),
    )


def downgrade() -> None:
    op.drop_index("ix_queue_shown", table_name="queue", postgresql_where=sa.text(SHOWN))
