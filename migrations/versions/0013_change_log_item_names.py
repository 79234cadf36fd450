"""A batch's names are found by name: a GIN index on change_log_items.names.

Every deny-entry change, one name or a batch, goes through one writer, which logs a
batch as one change_log row with its names in change_log_items. The /no_follow and
/blocked lists show when and by whom each entry was added: for a name in a batch, that
is the change_log_items row whose names contain it, found with this index.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("CREATE INDEX ix_change_log_items_names ON change_log_items USING gin (names)")


def downgrade() -> None:
    op.execute("DROP INDEX ix_change_log_items_names")
