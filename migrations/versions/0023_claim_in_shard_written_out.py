"""claim_in_shard written out: the cluster's walk, lock and claim in the function itself

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04 13:00:00

Until now the function took its three statements as text from the caller, with
`{queue}`, `{roots}` and `{root_claims}` in them, and swapped in the shard group's
relations; the claim's text was one server's, its parameters and relations renamed by
regular expressions (crawler.db.deployments.claims_cluster.in_shard). Each deployment's claim is now
written out where it runs: one server's in crawler.db.deployments.claims_one_server, the
cluster's in the function. The statements name the group's shards through format()'s
positional arguments: %1$s the shard of `roots`, %2$s of `queue`, %3$s of `root_claims`
(shard_name() quotes them as needed). On a shard there is nothing to route, so the claim
carries none of the `root = ANY(:locked)` filters that told the coordinator which shard a
statement was for: it is one server's statement on the group's relations.

A group whose shards are locked against writes (a shard move with block_writes, DDL) is
passed over rather than waited on, now that one claim visits several groups. The
signature loses the three texts; the rest of the work is 0021's: page after page of
the group's due roots until the locked roots have room for `n`, the group's due roots are
done, or `walk_most` roots are passed; then the claim. Each statement is prepared once per
session (claim_in_shard_prepared, migration 0020).

Version 3 of claim_in_shard, installed from crawler/db/functions (its newest version,
which supersedes). A downgrade leaves it there: the package holds no older body.
"""

from collections.abc import Sequence

from alembic import op

from crawler.db.functions import install_function

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Version 2's (migration 0021).
OLD_SIGNATURE = (
    "claim_in_shard(varchar, text, text, text, int, int, int, int, int, int, interval, varchar)"
)


def upgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {OLD_SIGNATURE}")
    install_function(op, "claim_in_shard", version=3)


def downgrade() -> None:
    pass  # claim_in_shard stays at its newest: there is no older body to put back
