"""The list's sorts by date walk the shown hosts in the page's order: ix_hosts_shown_by_date

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-07 22:30:00

ix_hosts_discovered_at held the date alone, over every row. The host list's newest and
oldest sorts (and "never crawled, newest first") order by (discovered_at, hostname) over
the shown hosts, and a bulk seed dates a batch of 20,000 names alike: each page read that
whole run and sorted it by name before its first row came out, and walked every deny
entry newer than the shown hosts (a block list loaded after a seed: 12,700 entries a
shard at 300,000 hosts, bench/export.py). The new index holds the page's whole order over
the shown rows only (one row a host since 0030, so the rule is a predicate of the row):
the walk stops at the page's end. Its key is wider (the name beside the date) and it
leaves out the hidden rows; the export's --since with --include-denied reads without it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SHOWN = "status_reason IS NULL AND denied_by IS NULL"


def upgrade() -> None:
    op.create_index(
        "ix_hosts_shown_by_date",
        "hosts",
        ["discovered_at", "hostname"],
        postgresql_where=sa.text(SHOWN),
    )
    op.drop_index("ix_hosts_discovered_at", table_name="hosts")


def downgrade() -> None:
    op.create_index("ix_hosts_discovered_at", "hosts", ["discovered_at"])
    op.drop_index("ix_hosts_shown_by_date", table_name="hosts")
