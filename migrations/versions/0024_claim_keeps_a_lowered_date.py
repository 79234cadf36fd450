"""claim_in_shard keeps a root's date that a writer lowered while the claim ran

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04 16:30:00

The claim sets each locked root's next_due_at from its statement's snapshot. A writer
that made rows of that root due after the snapshot (a no_follow entry removed, its rows
put back in routing) and committed while the claim ran was not seen: the claim raised
the root's date past those rows, and a crawl that drains on "nothing due" stopped with
them queued (seen on the cluster, where the claim takes longer). Every writer that makes
rows due now writes their root's row (crawler.db.rollups.LOWER_NEXT_DUE), so the claim
keeps the lower of the two dates when the row's version is not the one its snapshot saw
(one server's statement: crawler.db.deployments.claims_one_server). The function is 0023's
otherwise.

Version 4 of claim_in_shard, installed from crawler/db/functions. A downgrade leaves it
there: version 3 is in git's history, not in the package (crawler.db.functions).
"""

from collections.abc import Sequence

from alembic import op

from crawler.db.functions import install_function

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    install_function(op, "claim_in_shard", version=4)


def downgrade() -> None:
    pass  # claim_in_shard stays at its newest: there is no older body to put back
