"""keys with root: hosts and queue keyed by (hostname, root)

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02 16:20:00

On a Citus cluster the per-root tables are distributed by `root`, and Citus needs
the distribution column in every primary key and unique index, and in a foreign key
between two distributed tables. `root` is a function of `hostname` (its registered
domain), so (hostname, root) is as unique as hostname was. hostname stays first: a
lookup by name alone is one probe of the same index. The queue's foreign key follows.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def rekey(columns: str) -> None:
    op.drop_constraint("fk_queue_hostname_hosts", "queue", type_="foreignkey")
    for table in ("queue", "hosts"):
        op.drop_constraint(f"pk_{table}", table, type_="primary")
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} PRIMARY KEY ({columns})")
    op.execute(
        f"ALTER TABLE queue ADD CONSTRAINT fk_queue_hostname_hosts FOREIGN KEY ({columns})"
        f" REFERENCES hosts ({columns}) ON DELETE CASCADE"
    )


def upgrade() -> None:
    rekey("hostname, root")


def downgrade() -> None:
    rekey("hostname")
