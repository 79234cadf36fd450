"""One row per host: the queue's columns move into hosts, and `queue` becomes a view

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-07 22:00:00

Every host had two rows keyed by the same (hostname, root), one in hosts and one in the
queue (their writers made both in one transaction, and the queue's went with its host):
the name stood in two heaps and two primary keys, and every reader of both joined them.
The queue's columns, check and indexes move into hosts, renamed ix_hosts_* (what they
serve is unchanged); the rows' values are copied by key; the queue table goes, and a
view of the same name and columns keeps the operators' SQL reading it (DESIGN: a view is
fine). bench/storage.py: 708.8 B/host seeded at 0029, 527.4 for this layout.

The copy rewrites every row of hosts once: a big database may want `VACUUM FULL hosts`
afterwards (docs/scaling.md). On a Citus cluster both tables are distributed by root and
co-located, so the copy runs shard by shard; the view lives on the coordinator, and
writers name hosts (Citus modifies no view over a distributed table). claim_in_shard
(version 5) claims from the hosts shard. A downgrade rebuilds the queue table from the
routing columns, distributed as hosts is, and drops them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from crawler.db.functions import install_function

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HOSTNAME = sa.String(length=253, collation="C")


def routing() -> list[sa.Column]:
    """The queue's columns but its key, in its order (each call new: a column has one table)."""
    return [
        sa.Column("next_claim_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status_reason", sa.String(length=16), nullable=True),
        sa.Column("blocked_reason", sa.Text(), nullable=True),
        sa.Column("blocked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("denied_by", HOSTNAME, nullable=True),
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("unfinished_claims", sa.SmallInteger(), server_default="0", nullable=False),
    ]


NAMES = [column.name for column in routing()]
SHOWN = "status_reason IS NULL AND denied_by IS NULL"
HIDDEN = "status_reason IS NOT NULL OR denied_by IS NOT NULL"
# (name without its table's prefix, columns, where, include)
INDEXES = (
    ("root_due", ["root", "next_claim_at"], SHOWN, None),
    ("root_claimed", ["root"], "claimed_by IS NOT NULL", None),
    ("due", ["next_claim_at"], SHOWN, None),
    ("entries", ["hostname"], "status_reason IS NOT NULL", ["status_reason"]),
    ("denied_by", ["denied_by"], "denied_by IS NOT NULL", None),
    ("reversed", [sa.literal_column("reverse(hostname::text)")], None, None),
    ("shown", ["hostname"], SHOWN, None),
    ("hidden_root", ["root"], HIDDEN, None),
    (
        "hidden_sample",
        [
            sa.literal_column("(hashtext(hostname::text) & 65535)"),
            "hostname",
            "root",
            "status_reason",
        ],
        HIDDEN,
        None,
    ),
)
# The queue's columns in its table's order (root last, as the model had it).
VIEW = f"CREATE VIEW queue AS SELECT hostname, {', '.join(NAMES)}, root FROM hosts"
CITUS = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"


def upgrade() -> None:
    for column in routing():
        op.add_column("hosts", column)
    assigned = ", ".join(f"{name} = q.{name}" for name in NAMES)
    op.execute(
        f"UPDATE hosts h SET {assigned} FROM queue q"
        " WHERE q.root = h.root AND q.hostname = h.hostname"
    )
    op.drop_table("queue")
    op.create_check_constraint(
        "status_reason", "hosts", "status_reason IN ('blocked', 'no_follow')"
    )
    _create_indexes("hosts")
    op.execute("ALTER TABLE hosts SET (fillfactor = 90)")
    op.execute(VIEW)
    install_function(op, "claim_in_shard", version=5)


def downgrade() -> None:
    op.execute("DROP VIEW queue")
    op.create_table(
        "queue",
        sa.Column("hostname", HOSTNAME, nullable=False),
        *routing(),
        sa.Column("root", HOSTNAME, nullable=False),
        sa.CheckConstraint(
            "status_reason IN ('blocked', 'no_follow')", name=op.f("ck_queue_status_reason")
        ),
        sa.PrimaryKeyConstraint("hostname", "root", name="pk_queue"),
    )
    if _hosts_distributed():
        op.execute("SELECT create_distributed_table('queue', 'root', colocate_with => 'hosts')")
    op.create_foreign_key(
        "fk_queue_hostname_hosts",
        "queue",
        "hosts",
        ["hostname", "root"],
        ["hostname", "root"],
        ondelete="CASCADE",
    )
    op.execute(
        f"INSERT INTO queue (hostname, root, {', '.join(NAMES)})"
        f" SELECT hostname, root, {', '.join(NAMES)} FROM hosts"
    )
    for name, *_ in INDEXES:
        op.drop_index(f"ix_hosts_{name}", table_name="hosts")
    op.drop_constraint(op.f("ck_hosts_status_reason"), "hosts", type_="check")
    for name in reversed(NAMES):
        op.drop_column("hosts", name)
    op.execute("ALTER TABLE hosts SET (fillfactor = 80)")
    op.execute("ALTER TABLE queue SET (fillfactor = 90)")
    _create_indexes("queue")


def _create_indexes(table: str) -> None:
    for name, columns, where, include in INDEXES:
        op.create_index(
            f"ix_{table}_{name}",
            table,
            columns,
            postgresql_where=sa.text(where) if where else None,
            postgresql_include=include or [],
        )


def _hosts_distributed() -> bool:
    conn = op.get_bind()
    if not conn.execute(sa.text(CITUS)).scalar():
        return False
    found = "SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'hosts'::regclass)"
    return bool(conn.execute(sa.text(found)).scalar())
