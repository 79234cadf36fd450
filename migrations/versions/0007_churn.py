"""churn: table settings for sustained churn

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 03:40:00

Every crawled host is an UPDATE of its `queue` row (claim, then finish) and of
its `hosts` row (the result). With Postgres' defaults autovacuum waits for 20%
of a table to be dead before it cleans: 2M dead rows at 10M hosts, so the
tables and their indexes bloat between runs and claims walk dead index entries.
Here (docs/scaling.md, bench/churn.py for the measurements):

- autovacuum on `queue` and `hosts` triggers on 1% + 5,000 dead rows (analyze
  on 2%), so a big table is vacuumed as often as a small one is by default,
  and without cost-based sleeping (`autovacuum_vacuum_cost_delay` 0 on these
  two: their vacuum is the work that keeps claims fast);
- fillfactor 80 on `hosts`: a recrawl whose outcome did not change touches no
  indexed column, so with room on the page its update is HOT (no new index
  entries, pruned without vacuum);
- fillfactor 90 on `queue`: its updates always change `next_claim_at` (indexed
  by ix_queue_due, which claims need), so they are never HOT; a little room
  keeps the new version on the same page (less I/O) without doubling the table;
- `trap_window` (a few rows per root, rewritten per outcome), `roots` (issue
  12's per-root counters, rewritten by every claim and finish) and
  `root_claims` get the same thresholds: they are vacuumed often and cheaply;
  `roots` gets fillfactor 70 (its rows are small and updated all the time).

Storage parameters only: nothing in the models changes (alembic check ignores them).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHURN = {
    "autovacuum_vacuum_scale_factor": "0.01",
    "autovacuum_vacuum_threshold": "5000",
    "autovacuum_vacuum_insert_scale_factor": "0.02",
    "autovacuum_analyze_scale_factor": "0.02",
    "autovacuum_vacuum_cost_delay": "0",
}
SETTINGS = {
    "queue": {**CHURN, "fillfactor": "90"},
    "hosts": {**CHURN, "fillfactor": "80"},
    "trap_window": CHURN,
    "roots": {**CHURN, "fillfactor": "70"},
    "root_claims": CHURN,
}


def upgrade() -> None:
    for table, options in SETTINGS.items():
        values = ", ".join(f"{name} = {value}" for name, value in options.items())
        op.execute(f"ALTER TABLE {table} SET ({values})")


def downgrade() -> None:
    for table, options in SETTINGS.items():
        op.execute(f"ALTER TABLE {table} RESET ({', '.join(options)})")
