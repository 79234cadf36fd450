"""fallback: the HTTP fallback and the block self-check

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 03:40:00

hosts.scheme: which scheme answered a host's last crawl (https, or plain http
by the fallback); trap_deferrals: blocks the self-check held back (the panel's
banner while our resolver or network is not answering).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


NOW = sa.func.now()


def upgrade() -> None:
    op.add_column("hosts", sa.Column("scheme", sa.String(8), nullable=True))
    op.create_table(
        "trap_deferrals",
        sa.Column("root", sa.String(253, collation="C"), nullable=False),
        sa.Column("why", sa.Text(), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.PrimaryKeyConstraint("root", name=op.f("pk_trap_deferrals")),
    )


def downgrade() -> None:
    op.drop_table("trap_deferrals")
    op.drop_column("hosts", "scheme")
