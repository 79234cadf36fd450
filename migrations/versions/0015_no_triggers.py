"""no triggers: the writers keep the roots and host_hours themselves

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 16:10:00

Citus refuses triggers on distributed tables, and the tables these triggers wrote
(roots, and host_hours beside every finish) are what a cluster shards by root. The
writers now keep them in their own transactions, through crawler.db.crawl.rollups, the same
code on one server and on a cluster. `queue.root` is given by every writer (it was
filled from hosts.root by queue_fill_root when left out).
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def revision_module(filename: str):
    """An earlier revision's module, for the trigger definitions it made."""
    path = Path(__file__).with_name(filename)
    spec = importlib.util.spec_from_file_location(f"hostcrawl_migration_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade() -> None:
    roots, hours = revision_module("0006_roots.py"), revision_module("0009_host_hours.py")
    tables = {**roots.TRIGGER_TABLES, **dict.fromkeys(hours.TRIGGERS, "hosts")}
    for trigger, table in tables.items():
        op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
    # 0009's trigger functions are named as their triggers.
    for function in [*roots.FUNCTION_NAMES, *hours.TRIGGERS]:
        op.execute(f"DROP FUNCTION IF EXISTS {function}()")


def downgrade() -> None:
    roots, hours = revision_module("0006_roots.py"), revision_module("0009_host_hours.py")
    for function in roots.FUNCTIONS:
        op.execute(function)
    for trigger in roots.TRIGGERS:
        op.execute(trigger)
    for function in hours.FUNCTIONS:
        op.execute(function)
    for name, trigger in hours.TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {trigger}")
    op.execute(hours.LOWER_NEXT_DUE.format(also=hours.JUST_CLAIMED))
