"""claim_in_shard walks on: page after page of the group's due roots until the batch has room

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03 15:00:00

A root at its concurrency keeps its place at the front of the walk while it has hosts
due, so a crawl's running claims can fill the walk's one page with roots that have no
room, and the claim came back empty with hosts due behind them (on one server, a claim
of 10 behind 60 such roots). The function now walks a page (`walk` roots), locks, and
walks on from where the page ended, each page twice the last, until the locked roots
have room for `n` hosts, the group's due roots are done, or it has passed `walk_most`
roots; then the claim, as before. The lock's statement returns the locked roots' room
beside them; a root the walk meets twice (it moved while the claim walked) is locked once.

Version 2 of claim_in_shard, a new signature (`walk_most`): the old one is dropped, and
the function installed from crawler/db/functions (its newest version, which supersedes).
A downgrade leaves it there: the package holds no older body (crawler.db.functions).
"""

from collections.abc import Sequence

from alembic import op

from crawler.db.functions import install_function

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Version 1's (migration 0020).
OLD_SIGNATURE = (
    "claim_in_shard(varchar, text, text, text, int, int, int, int, int, interval, varchar)"
)


def upgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {OLD_SIGNATURE}")
    install_function(op, "claim_in_shard", version=2)


def downgrade() -> None:
    pass  # claim_in_shard stays at its newest: there is no older body to put back
