"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-30 13:21:44.439365
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from crawler.db.functions import drop_function, install_function

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    install_function(op, "host_parents", version=1)
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("hostname", sa.String(length=253, collation="C"), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at"], unique=False)
    op.create_index("ix_audit_log_hostname", "audit_log", ["hostname"], unique=False)
    op.create_table(
        "hosts",
        sa.Column("hostname", sa.String(length=253, collation="C"), nullable=False),
        sa.Column("root", sa.String(length=253, collation="C"), nullable=False),
        sa.Column(
            "discovered_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("discovered_from", sa.String(length=253, collation="C"), nullable=True),
        sa.Column("last_crawled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=32), nullable=True),
        sa.Column("http_status", sa.SmallInteger(), nullable=True),
        sa.Column("final_url", sa.Text(), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("links_found", sa.Integer(), nullable=True),
        sa.Column("links_saved", sa.Integer(), nullable=True),
        sa.Column("links_filtered", sa.Integer(), nullable=True),
        sa.Column("fail_streak", sa.Integer(), server_default="0", nullable=False),
        sa.Column("crawl_count", sa.Integer(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("hostname", name=op.f("pk_hosts")),
    )
    op.create_index("ix_hosts_discovered_at", "hosts", ["discovered_at"], unique=False)
    op.create_index("ix_hosts_outcome", "hosts", ["outcome"], unique=False)
    op.create_index(
        "ix_hosts_reversed", "hosts", [sa.literal_column("reverse(hostname::text)")], unique=False
    )
    op.create_index("ix_hosts_root", "hosts", ["root"], unique=False)
    op.create_table(
        "trap_window",
        sa.Column("root", sa.String(length=253, collation="C"), nullable=False),
        sa.Column("hostname", sa.String(length=253, collation="C"), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column(
            "seen_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.PrimaryKeyConstraint("root", "hostname", name=op.f("pk_trap_window")),
    )
    op.create_index("ix_trap_window_root_seen_at", "trap_window", ["root", "seen_at"], unique=False)
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=False),
        sa.Column("api_token_hash", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("failed_logins", sa.Integer(), server_default="0", nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("username", name=op.f("uq_users_username")),
    )
    op.create_table(
        "queue",
        sa.Column("hostname", sa.String(length=253, collation="C"), nullable=False),
        sa.Column("next_claim_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status_reason", sa.String(length=16), nullable=True),
        sa.Column("blocked_reason", sa.Text(), nullable=True),
        sa.Column("blocked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("denied_by", sa.String(length=253, collation="C"), nullable=True),
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status_reason IN ('blocked', 'no_follow')", name=op.f("ck_queue_status_reason")
        ),
        sa.ForeignKeyConstraint(
            ["hostname"],
            ["hosts.hostname"],
            name=op.f("fk_queue_hostname_hosts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("hostname", name=op.f("pk_queue")),
    )
    op.create_index(
        "ix_queue_denied_by",
        "queue",
        ["denied_by"],
        unique=False,
        postgresql_where=sa.text("denied_by IS NOT NULL"),
    )
    op.create_index(
        "ix_queue_due",
        "queue",
        ["next_claim_at"],
        unique=False,
        postgresql_where=sa.text("status_reason IS NULL AND denied_by IS NULL"),
    )
    op.create_index(
        "ix_queue_entries",
        "queue",
        ["hostname"],
        unique=False,
        postgresql_where=sa.text("status_reason IS NOT NULL"),
    )
    op.create_index(
        "ix_queue_reversed", "queue", [sa.literal_column("reverse(hostname::text)")], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_queue_reversed", table_name="queue")
    op.drop_index(
        "ix_queue_entries",
        table_name="queue",
        postgresql_where=sa.text("status_reason IS NOT NULL"),
    )
    op.drop_index(
        "ix_queue_due",
        table_name="queue",
        postgresql_where=sa.text("status_reason IS NULL AND denied_by IS NULL"),
    )
    op.drop_index(
        "ix_queue_denied_by", table_name="queue", postgresql_where=sa.text("denied_by IS NOT NULL")
    )
    op.drop_table("queue")
    op.drop_table("users")
    op.drop_index("ix_trap_window_root_seen_at", table_name="trap_window")
    op.drop_table("trap_window")
    op.drop_index("ix_hosts_root", table_name="hosts")
    op.drop_index("ix_hosts_reversed", table_name="hosts")
    op.drop_index("ix_hosts_outcome", table_name="hosts")
    op.drop_index("ix_hosts_discovered_at", table_name="hosts")
    op.drop_table("hosts")
    op.drop_index("ix_audit_log_hostname", table_name="audit_log")
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_table("audit_log")
    drop_function(op, "host_parents")
