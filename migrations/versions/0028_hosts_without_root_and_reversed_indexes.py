"""hosts loses ix_hosts_reversed and ix_hosts_root: the queue's indexes serve their readers

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-07 16:00:00

Every host has its queue row (its writers make both in one transaction; the queue's goes
with it), and the queue has an index over reversed names and two partial ones by root
(ix_queue_root_due for the rows shown, ix_queue_hidden_root for the others). hosts'
copies cost 57.6 and 19.1 bytes a host of 787 (bench/storage.py, 1M hosts seeded):

- ix_hosts_reversed had one reader, a root's page (its hosts in name-tree order): it
  walks ix_queue_reversed now and looks each row's facts up by pk_hosts
  (webpanel.queries.root_rows.subdomain_statement).
- ix_hosts_root served the list's and the export's root filter, which now tests the
  queue's root (crawler.db.operators.host_filter.of_root). It was also a trap: the planner took it
  for the probe of a host's facts, which pk_hosts serves, and read every host of the
  root on each probe (the result write and the claim before, bench/HISTORY.md; the
  export and the "never crawled" list until this migration).

tests/unit/test_index_plans.py checks each reader's plan on both deployments. Dropping
an index loses no row; on a Citus cluster DROP INDEX and a downgrade's CREATE INDEX reach
every shard (as in 0027).
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
    op.drop_index("ix_hosts_root", table_name="hosts")


def downgrade() -> None:
    op.create_index("ix_hosts_root", "hosts", ["root"], unique=False)
    op.create_index(
        "ix_hosts_reversed", "hosts", [sa.literal_column("reverse(hostname::text)")], unique=False
    )
