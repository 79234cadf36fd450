"""roots: per-root politeness, budgets and wildcard flags (issue 12)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 03:40:00

Reserved in the chain so that each piece of work owns one revision; empty
until that work needs a schema change.
"""

from collections.abc import Sequence

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
