"""crawl_workers: each running crawler worker, its heartbeat and its pages per second

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02 19:00:00

Each worker writes its row every few seconds (crawler/extensions/heartbeat.py); the panel's
dashboard counts the rows with a recent heartbeat as alive and shows each one's
pages/s. A worker that stops deletes its row; one that was killed leaves it, and
the retention runner deletes it a day after its last heartbeat. A coordinator-local
table on Citus: a few rows, never joined to the per-root tables.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "crawl_workers",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("host", sa.Text(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "heartbeat_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("pages", sa.BigInteger(), nullable=False),
        sa.Column("pages_per_s", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_crawl_workers")),
    )


def downgrade() -> None:
    op.drop_table("crawl_workers")
