"""fallback: the HTTP fallback and the block self-check (issue 11)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 03:40:00

Reserved in the chain so that each piece of work owns one revision; empty
until that work needs a schema change.
"""

from collections.abc import Sequence

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
