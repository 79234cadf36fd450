"""accounts: accounts and sessions operators can trust

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 03:40:00

Roles (admin, viewer), disabled accounts and a session generation on users;
failed logins move from a per-account lock (which anyone could trigger by
guessing) to login_failures, keyed by (username, client address) and by address.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "users", sa.Column("role", sa.String(length=16), server_default="admin", nullable=False)
    )
    op.add_column("users", sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column(
        "users",
        sa.Column("session_generation", sa.Integer(), server_default="1", nullable=False),
    )
    op.create_check_constraint(op.f("ck_users_role"), "users", "role IN ('admin', 'viewer')")
    op.drop_column("users", "locked_until")
    op.drop_column("users", "failed_logins")
    op.create_table(
        "login_failures",
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column(
            "last_failed_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("username", "address", name=op.f("pk_login_failures")),
    )
    op.create_index(
        "ix_login_failures_last_failed_at", "login_failures", ["last_failed_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_login_failures_last_failed_at", table_name="login_failures")
    op.drop_table("login_failures")
    op.add_column(
        "users", sa.Column("failed_logins", sa.Integer(), server_default="0", nullable=False)
    )
    op.add_column("users", sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True))
    op.drop_constraint(op.f("ck_users_role"), "users", type_="check")
    op.drop_column("users", "session_generation")
    op.drop_column("users", "disabled_at")
    op.drop_column("users", "role")
