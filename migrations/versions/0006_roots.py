"""roots: per-root politeness, budgets and wildcard flags

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 03:40:00

- `queue.root`: the claim groups by root. Filled from `hosts.root` by a BEFORE
  INSERT trigger when a writer leaves it out (the root needs the PSL, so SQL
  cannot compute it, but the hosts row always exists first: queue references it).
- `roots`: one row per root, kept by statement triggers on hosts, queue and
  trap_window, so every writer (insert_hosts, ensure_row, bulk loads, routing)
  keeps it right without knowing about it: hosts known / crawled OK / failed,
  the trap window's failures, `next_due_at` (a lower bound of the earliest date
  of the root's routable hosts: the claim walks roots in that order) and
  `held_until` (over budget: the root's hosts wait until then).
- `root_claims`: hosts of a root claimed per minute, for the rolling-hour budget.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HOSTNAME = sa.String(length=253, collation="C")
ROUTABLE = "status_reason IS NULL AND denied_by IS NULL"
# crawler.core.outcomes.NETWORK_FAILURES, as of this revision: what a trap window counts.
NETWORK_FAILURES = (
    "'DNS_NXDOMAIN','DNS_SERVFAIL','DNS_NOANSWER','DNS_TIMEOUT','DNS_REFUSED','DNS_ERROR',"
    "'TCP_REFUSED','TCP_TIMEOUT','TCP_RESET','TLS_HANDSHAKE','TLS_TIMEOUT'"
)
# A crawled host "failed" when its last outcome is neither alive nor ignored.
OK_SQL = "coalesce(outcome IN ('OK', 'DNS_ALIVE'), false)::int"
FAILED_SQL = "(outcome IS NOT NULL AND outcome NOT IN ('OK', 'DNS_ALIVE', 'IGNORED'))::int"

FUNCTIONS = [
    # queue.root from hosts.root when the writer did not give it.
    """
    CREATE FUNCTION queue_fill_root() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.root IS NULL THEN
            SELECT h.root INTO NEW.root FROM hosts h WHERE h.hostname = NEW.hostname;
        END IF;
        RETURN NEW;
    END $$
    """,
    # New hosts: counted in their roots (rows made in root order: the lock order).
    f"""
    CREATE FUNCTION roots_count_new_hosts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO roots AS r (root, hosts, crawled_ok, failed)
        SELECT root, count(*), sum({OK_SQL}), sum({FAILED_SQL})
          FROM new_rows GROUP BY root ORDER BY root
        ON CONFLICT (root) DO UPDATE SET hosts = r.hosts + excluded.hosts,
               crawled_ok = r.crawled_ok + excluded.crawled_ok,
               failed = r.failed + excluded.failed;
        RETURN NULL;
    END $$
    """,
    # Crawled hosts: OK / failed moved by the change of outcome (only roots that moved).
    f"""
    CREATE FUNCTION roots_count_outcomes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO roots AS r (root, hosts, crawled_ok, failed)
        SELECT n.root, 0, sum({OK_SQL.replace("outcome", "n.outcome")}
                              - {OK_SQL.replace("outcome", "o.outcome")}),
               sum({FAILED_SQL.replace("outcome", "n.outcome")}
                   - {FAILED_SQL.replace("outcome", "o.outcome")})
          FROM new_rows n JOIN old_rows o USING (hostname)
         WHERE n.outcome IS DISTINCT FROM o.outcome
         GROUP BY n.root ORDER BY n.root
        ON CONFLICT (root) DO UPDATE SET crawled_ok = r.crawled_ok + excluded.crawled_ok,
               failed = r.failed + excluded.failed;
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE FUNCTION roots_count_gone_hosts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE roots r SET hosts = r.hosts - g.n, crawled_ok = r.crawled_ok - g.ok,
               failed = r.failed - g.failed
          FROM (SELECT root, count(*) AS n, sum({OK_SQL}) AS ok, sum({FAILED_SQL}) AS failed
                  FROM old_rows GROUP BY root) g
         WHERE r.root = g.root;
        RETURN NULL;
    END $$
    """,
    # hosts emptied: so is everything derived from it.
    """
    CREATE FUNCTION roots_forget_all() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM roots;
        DELETE FROM root_claims;
        RETURN NULL;
    END $$
    """,
    # A queue row got an earlier date, or became routable: its root may be due sooner.
    # Only rows that move the bound are written (an UPDATE whose WHERE fails locks nothing).
    f"""
    CREATE FUNCTION roots_lower_next_due() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE roots r SET next_due_at = d.due
          FROM (SELECT root, min(next_claim_at) AS due FROM new_rows
                 WHERE {ROUTABLE} AND next_claim_at IS NOT NULL GROUP BY root) d
         WHERE r.root = d.root AND (r.next_due_at IS NULL OR r.next_due_at > d.due);
        RETURN NULL;
    END $$
    """,
    # The trap window of the touched roots, counted again (a window is at most 50 rows).
    f"""
    CREATE FUNCTION roots_count_windows() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE roots r SET window_size = w.size, window_failed = w.failed
          FROM (SELECT t.root, count(w.hostname) AS size,
                       count(w.hostname) FILTER (WHERE w.outcome IN ({NETWORK_FAILURES})) AS failed
                  FROM (SELECT DISTINCT root FROM changed_rows) t
                  LEFT JOIN trap_window w ON w.root = t.root
                 GROUP BY t.root) w
         WHERE r.root = w.root
           AND (r.window_size, r.window_failed) IS DISTINCT FROM (w.size, w.failed);
        RETURN NULL;
    END $$
    """,
]

TRIGGERS = [
    "CREATE TRIGGER queue_fill_root BEFORE INSERT ON queue"
    " FOR EACH ROW EXECUTE FUNCTION queue_fill_root()",
    "CREATE TRIGGER roots_count_new_hosts AFTER INSERT ON hosts"
    " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION roots_count_new_hosts()",
    "CREATE TRIGGER roots_count_outcomes AFTER UPDATE ON hosts"
    " REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION roots_count_outcomes()",
    "CREATE TRIGGER roots_count_gone_hosts AFTER DELETE ON hosts"
    " REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION roots_count_gone_hosts()",
    "CREATE TRIGGER roots_forget_all AFTER TRUNCATE ON hosts"
    " FOR EACH STATEMENT EXECUTE FUNCTION roots_forget_all()",
    "CREATE TRIGGER roots_lower_next_due_insert AFTER INSERT ON queue"
    " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION roots_lower_next_due()",
    "CREATE TRIGGER roots_lower_next_due_update AFTER UPDATE ON queue"
    " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION roots_lower_next_due()",
    "CREATE TRIGGER roots_count_windows_insert AFTER INSERT ON trap_window"
    " REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION roots_count_windows()",
    "CREATE TRIGGER roots_count_windows_update AFTER UPDATE ON trap_window"
    " REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION roots_count_windows()",
    "CREATE TRIGGER roots_count_windows_delete AFTER DELETE ON trap_window"
    " REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION roots_count_windows()",
]
TRIGGER_TABLES = {
    "queue_fill_root": "queue",
    "roots_count_new_hosts": "hosts",
    "roots_count_outcomes": "hosts",
    "roots_count_gone_hosts": "hosts",
    "roots_forget_all": "hosts",
    "roots_lower_next_due_insert": "queue",
    "roots_lower_next_due_update": "queue",
    "roots_count_windows_insert": "trap_window",
    "roots_count_windows_update": "trap_window",
    "roots_count_windows_delete": "trap_window",
}
FUNCTION_NAMES = [
    "queue_fill_root",
    "roots_count_new_hosts",
    "roots_count_outcomes",
    "roots_count_gone_hosts",
    "roots_forget_all",
    "roots_lower_next_due",
    "roots_count_windows",
]


def upgrade() -> None:
    op.create_table(
        "roots",
        sa.Column("root", HOSTNAME, nullable=False),
        sa.Column("hosts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("crawled_ok", sa.Integer(), server_default="0", nullable=False),
        sa.Column("failed", sa.Integer(), server_default="0", nullable=False),
        sa.Column("window_size", sa.SmallInteger(), server_default="0", nullable=False),
        sa.Column("window_failed", sa.SmallInteger(), server_default="0", nullable=False),
        sa.Column("next_due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("held_until", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("root", name=op.f("pk_roots")),
    )
    op.create_index("ix_roots_next_due_at", "roots", ["next_due_at"])
    op.create_index("ix_roots_hosts", "roots", ["hosts", "root"])
    op.create_index("ix_roots_window_failed", "roots", ["window_failed", "root"])
    op.create_index("ix_roots_failed", "roots", ["failed", "root"])
    op.create_index("ix_roots_reversed", "roots", [sa.literal_column("reverse(root::text)")])
    op.create_table(
        "root_claims",
        sa.Column("root", HOSTNAME, nullable=False),
        sa.Column("minute", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("root", "minute", name=op.f("pk_root_claims")),
    )
    op.create_index("ix_root_claims_minute", "root_claims", ["minute"])
    op.create_index("ix_hosts_last_crawled_at", "hosts", ["last_crawled_at"])
    op.add_column("queue", sa.Column("root", HOSTNAME, nullable=True))
    op.execute("UPDATE queue q SET root = h.root FROM hosts h WHERE h.hostname = q.hostname")
    op.alter_column("queue", "root", nullable=False)
    op.create_index(
        "ix_queue_root_due",
        "queue",
        ["root", "next_claim_at"],
        postgresql_where=sa.text(ROUTABLE),
    )
    op.create_index(
        "ix_queue_root_claimed",
        "queue",
        ["root"],
        postgresql_where=sa.text("claimed_by IS NOT NULL"),
    )
    for function in FUNCTIONS:
        op.execute(function)
    for trigger in TRIGGERS:
        op.execute(trigger)
    # The counters of what is already there.
    op.execute(
        f"""
        INSERT INTO roots (root, hosts, crawled_ok, failed)
        SELECT root, count(*), sum({OK_SQL}), sum({FAILED_SQL}) FROM hosts GROUP BY root
        """
    )
    op.execute(
        f"""
        UPDATE roots r SET next_due_at = d.due FROM (
            SELECT root, min(next_claim_at) AS due FROM queue WHERE {ROUTABLE} GROUP BY root) d
         WHERE r.root = d.root
        """
    )
    op.execute(
        f"""
        UPDATE roots r SET window_size = w.size, window_failed = w.failed FROM (
            SELECT root, count(*) AS size,
                   count(*) FILTER (WHERE outcome IN ({NETWORK_FAILURES})) AS failed
              FROM trap_window GROUP BY root) w
         WHERE r.root = w.root
        """
    )


def downgrade() -> None:
    for name, table in TRIGGER_TABLES.items():
        op.execute(f"DROP TRIGGER {name} ON {table}")
    for name in FUNCTION_NAMES:
        op.execute(f"DROP FUNCTION {name}()")
    op.drop_index("ix_queue_root_claimed", table_name="queue")
    op.drop_index("ix_queue_root_due", table_name="queue")
    op.drop_column("queue", "root")
    op.drop_index("ix_hosts_last_crawled_at", table_name="hosts")
    op.drop_index("ix_root_claims_minute", table_name="root_claims")
    op.drop_table("root_claims")
    op.drop_index("ix_roots_reversed", table_name="roots")
    op.drop_index("ix_roots_failed", table_name="roots")
    op.drop_index("ix_roots_window_failed", table_name="roots")
    op.drop_index("ix_roots_hosts", table_name="roots")
    op.drop_index("ix_roots_next_due_at", table_name="roots")
    op.drop_table("roots")
