"""outage reasons: why the world does not answer, and each host's tries held back

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-04 16:00:00

world_silences gains the worker's reason: the failing layer (dns or network), its
tries and failures over the last summary span, the commonest error and the settings
to check, for the panel's banner. hosts.held_tries counts a host's tries whose failure
was held back (our resolver or network did not answer: not settled, not counted in
crawl_count); hosts.held_at and hosts.held_outcome are the last such try. The banner
counts the hosts held back since the silence began from held_at: distinct hosts, however
many workers tried each (ix_hosts_held_at, partial: only hosts ever held back).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("world_silences", sa.Column("layer", sa.String(16), nullable=True))
    op.add_column("world_silences", sa.Column("tries", sa.Integer(), nullable=True))
    op.add_column("world_silences", sa.Column("failures", sa.Integer(), nullable=True))
    op.add_column("world_silences", sa.Column("top_error", sa.String(32), nullable=True))
    op.add_column("world_silences", sa.Column("top_count", sa.Integer(), nullable=True))
    op.add_column("world_silences", sa.Column("span_s", sa.Float(), nullable=True))
    op.add_column("world_silences", sa.Column("settings_to_check", sa.Text(), nullable=True))
    op.add_column(
        "hosts", sa.Column("held_tries", sa.Integer(), server_default="0", nullable=False)
    )
    op.add_column("hosts", sa.Column("held_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("hosts", sa.Column("held_outcome", sa.String(32), nullable=True))
    op.create_index(
        "ix_hosts_held_at", "hosts", ["held_at"], postgresql_where=sa.text("held_at IS NOT NULL")
    )


def downgrade() -> None:
    op.drop_index("ix_hosts_held_at", table_name="hosts")
    for column in ("held_outcome", "held_at", "held_tries"):
        op.drop_column("hosts", column)
    for column in (
        "settings_to_check",
        "span_s",
        "top_count",
        "top_error",
        "failures",
        "tries",
        "layer",
    ):
        op.drop_column("world_silences", column)
