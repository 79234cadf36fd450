"""bulk: bulk seeding, block lists and export

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 03:40:00

A bulk change writes one audit_log row per batch (its count in `detail`); the
batch's names go to one audit_items row (arrays), so the panel's audit page can list them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_items",
        sa.Column("audit_id", sa.Integer(), nullable=False),
        sa.Column("names", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("details", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.ForeignKeyConstraint(
            ["audit_id"],
            ["audit_log.id"],
            name=op.f("fk_audit_items_audit_id_audit_log"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("audit_id", name=op.f("pk_audit_items")),
    )


def downgrade() -> None:
    op.drop_table("audit_items")
