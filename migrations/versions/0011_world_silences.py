"""world_silences: workers that find no canary answering them

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 14:40:00

A worker whose canaries do not answer (or that has none: no host has ever
answered in this database) holds its blocks and tries its failing hosts again
instead of settling them. Its row here says so to the panel, whose banner names
the cause ("no host has answered since …; blocks are held"); the worker deletes
it when a canary answers again, and rows a killed worker left go after a day.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "world_silences",
        sa.Column("worker", sa.Text(), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("never_answered", sa.Boolean(), nullable=False),
        sa.Column("held_back", sa.Integer(), nullable=False),
        sa.Column(
            "checked_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("worker", name=op.f("pk_world_silences")),
    )


def downgrade() -> None:
    op.drop_table("world_silences")
