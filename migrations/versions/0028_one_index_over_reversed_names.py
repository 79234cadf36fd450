"""one index over reversed names: ix_hosts_reversed goes, the queue's serves its one reader

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-07 16:00:00

Every host has its queue row (its writers make both in one transaction, the queue's goes
with it), and both indexes over reverse(hostname) held every name: 55 bytes a host each
(bench/storage.py). The one reader of hosts' (a root's page, its hosts in name-tree order:
webpanel.queries.root_rows.subdomain_page) now walks ix_queue_reversed and looks each
row's facts up by hosts' primary key. Dropping an index loses no row; on a Citus cluster
the DROP INDEX and the CREATE INDEX of a downgrade reach every shard (as in 0027).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_hosts_reversed", table_name="hosts")


def downgrade() -> None:
    op.create_index(
        "ix_hosts_reversed", "hosts", [sa.literal_column("reverse(hostname::text)")], unique=False
    )
