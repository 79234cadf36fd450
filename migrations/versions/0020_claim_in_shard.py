"""claim_in_shard: the polite claim's walk, lock and claim of one shard group, in one call

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03 07:20:00

On a Citus cluster the claim was three statements: the walk (due_roots_of_shard, a
delegated call), the lock and the claim, each routed to the worker of one shard group.
Citus plans the claim itself (one statement of modifying CTEs) as eight distributed
subplans, each a round trip with its intermediate results shipped through the
coordinator: 27 ms of a 38 ms claim, against 6 ms for the same statement on one server.
This function runs the three on the worker: `crawler.db.cluster.distribute` makes it a
distributed function co-located with `roots` by its `anchor` argument, so Citus
delegates a call to the worker holding the anchor's shard, where the statements read and
write that shard group's relations as plain Postgres: one round trip a claim.

Version 1 took the statements from the caller as texts, `{roots}`, `{queue}` and
`{root_claims}` in them for the shard group's relations. Each statement is prepared once
per session (claim_in_shard_prepared). Called on a node that does not hold the shard (a
call Citus did not delegate) it raises rather than touch the wrong rows. It replaces
due_roots_of_shard.

Both functions are stated in crawler/db/functions, and installed from there: this
installs their newest versions (crawler.db.functions says why that is the same schema).
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from alembic import op

from crawler.db.functions import drop_function, install_function

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    install_function(op, "claim_in_shard_prepared", version=1)
    install_function(op, "claim_in_shard", version=1)
    op.execute("DROP FUNCTION IF EXISTS due_roots_of_shard(varchar, int, int)")


def downgrade() -> None:
    drop_function(op, "claim_in_shard")
    drop_function(op, "claim_in_shard_prepared")
    op.execute(_revision_0019().DUE_ROOTS_OF_SHARD)


def _revision_0019():
    """Migration 0019's module (its name starts with a digit: loaded by path), where
    due_roots_of_shard, retired here, is stated."""
    path = Path(__file__).with_name("0019_due_roots_of_shard.py")
    spec = importlib.util.spec_from_file_location("revision_0019", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
