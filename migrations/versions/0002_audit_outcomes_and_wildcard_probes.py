"""audit outcomes and wildcard probes

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 13:41:05.208398
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "wildcard_probes",
        sa.Column("root", sa.String(length=253, collation="C"), nullable=False),
        sa.Column("probe", sa.String(length=253, collation="C"), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column(
            "checked_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("root", name=op.f("pk_wildcard_probes")),
    )
    op.add_column("hosts", sa.Column("audited_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("hosts", sa.Column("audit_outcome", sa.String(length=32), nullable=True))


def downgrade() -> None:
    op.drop_column("hosts", "audit_outcome")
    op.drop_column("hosts", "audited_at")
    op.drop_table("wildcard_probes")
