"""found_via: through which source each host was first found

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01 14:30:00

hosts.found_source: the source group that first named the host (links,
resources, metadata, headers, redirects, certificate, dns, robots);
hosts.found_via: the place in it (`script src`, `header Link`, `certificate`...).
With hosts.discovered_from (the host whose page named it) they say where and how
a host was first seen. Hosts found before this revision keep both NULL.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("hosts", sa.Column("found_source", sa.String(16), nullable=True))
    op.add_column("hosts", sa.Column("found_via", sa.String(64), nullable=True))


def downgrade() -> None:
    op.drop_column("hosts", "found_via")
    op.drop_column("hosts", "found_source")
