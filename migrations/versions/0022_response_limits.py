"""response limits: names dropped over the caps, extraction stopped, unfinished claims, floods

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04 13:00:00

hosts.links_over_cap: links of the host's last fetch dropped because the fetch had
saved MAX_NAMES_PER_PAGE names (or MAX_NAMES_PER_ROOT_PER_PAGE under that root);
hosts.extract_stopped: why reading the fetch stopped early (budget_spent), or NULL.
queue.unfinished_claims: claims of the host in a row that no finish released; the
claim after two such leases settles the host as HTTP_UNFINISHED (a poison pill is
not handed to worker after worker). hosts.name_flood: why the host's page was seen
to name a flood of registered domains that all failed at DNS (crawler.core.floods),
for the operator, who may block it. Rows before this revision start at 0 and NULL.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("hosts", sa.Column("links_over_cap", sa.Integer(), nullable=True))
    op.add_column("hosts", sa.Column("extract_stopped", sa.String(16), nullable=True))
    op.add_column("hosts", sa.Column("name_flood", sa.Text(), nullable=True))
    op.add_column(
        "queue",
        sa.Column("unfinished_claims", sa.SmallInteger(), server_default="0", nullable=False),
    )


def downgrade() -> None:
    op.drop_column("queue", "unfinished_claims")
    op.drop_column("hosts", "name_flood")
    op.drop_column("hosts", "extract_stopped")
    op.drop_column("hosts", "links_over_cap")
