"""The queue rows the main host list hides, by root: a partial index.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 14:30:00

The main page's figures are those of the hosts its list shows. They are the
trigger-kept totals (roots, host_hours) less the hosts the list hides: deny entries
and the rows an entry took out of routing. This index holds exactly those rows, by
root: "how many hosts of this root are hidden" is a short index scan, and "every
hidden row" a scan of an index as small as the hidden set (the main list's own
ix_queue_shown is its complement).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HIDDEN = "status_reason IS NOT NULL OR denied_by IS NOT NULL"


def upgrade() -> None:
    op.create_index("ix_queue_hidden_root", "queue", ["root"], postgresql_where=sa.text(HIDDEN))


def downgrade() -> None:
    op.drop_index("ix_queue_hidden_root", table_name="queue")
