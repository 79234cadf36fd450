"""host_minutes, the workers' in-flight and held-back counts, dropped_links

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04 16:00:00

The dashboard's health row (webpanel/templates/hosts/_health.html) charts the last hour
minute by minute: host_minutes, one row per minute and writer shard, kept by the writers
of hosts beside host_hours (crawler.db.crawl.rollups: the same batched statement's
transaction) and pruned after a few hours (crawler.db.crawl.retention). A coordinator-local
table on Citus, like host_hours: a few hundred rows, never joined to the per-root tables.

crawl_workers gains each worker's hosts in flight and hosts an outage holds back, written
with its heartbeat.

dropped_links counts, per deny entry name, the links crawled pages offered that the
entry dropped (crawler.db.crawl.dropped_links, in the crawl's finish). Kept per root with the
entry's own queue row: `crawler.db.server.cluster.distribute` co-locates it with roots.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HOSTNAME = sa.String(253, collation="C")
MINUTE_COUNTS = ("crawled", "discovered", "dns", "address", "tcp", "tls", "http")


def upgrade() -> None:
    op.create_table(
        "host_minutes",
        sa.Column("minute", sa.DateTime(timezone=True), nullable=False),
        sa.Column("shard", sa.SmallInteger(), nullable=False),
        *(sa.Column(c, sa.Integer(), server_default="0", nullable=False) for c in MINUTE_COUNTS),
        sa.Column("last_ok_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("minute", "shard", name="pk_host_minutes"),
    )
    for column in ("in_flight", "held_back"):
        op.add_column(
            "crawl_workers", sa.Column(column, sa.Integer(), server_default="0", nullable=False)
        )
    op.create_table(
        "dropped_links",
        sa.Column("hostname", HOSTNAME, nullable=False),
        sa.Column("root", HOSTNAME, nullable=False),
        sa.Column("links", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("hostname", "root", name="pk_dropped_links"),
    )


def downgrade() -> None:
    op.drop_table("dropped_links")
    for column in ("held_back", "in_flight"):
        op.drop_column("crawl_workers", column)
    op.drop_table("host_minutes")
