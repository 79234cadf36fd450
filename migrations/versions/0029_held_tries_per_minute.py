"""host_minutes.held: tries an outage held back, per minute

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-07 19:00:00

A failure while the world does not answer us is tried again, not settled
(crawler.db.crawl.queue.retry_soon): it was in no minute of host_minutes, so during a DNS
outage the health chart showed no failure, and "failed, last 5 min" read "—", while the
banner counted the failed lookups. Such a try now counts in its layer's column of its
minute, and in `held` (how many of the minute's tries were held back, for the share's
denominator: hosts settled plus tries held). Adding a column with a default rewrites no
row; on a Citus cluster host_minutes is the coordinator's own table (0025).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "host_minutes", sa.Column("held", sa.Integer(), server_default="0", nullable=False)
    )


def downgrade() -> None:
    op.drop_column("host_minutes", "held")
