"""accounts: accounts and sessions operators can trust (issue 13)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 03:40:00

Reserved in the chain so that each piece of work owns one revision; empty
until that work needs a schema change.
"""

from collections.abc import Sequence

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
