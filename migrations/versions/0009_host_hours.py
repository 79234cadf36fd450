"""host_hours: hosts discovered and crawled per hour, kept by triggers

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 06:40:00

The dashboard's timeline counted a day of `hosts` through two indexes on every
refresh: at 10M hosts that is a million rows and seconds (bench/growth.py). A
statement trigger on `hosts` now adds each statement's discoveries and crawls
to one row per hour, so the chart reads at most 24 x SHARDS rows. Each crawl
counts in its hour (a recrawl too: the chart shows work done, not the hosts'
latest state). Each row also keeps the last few hosts that answered OK: the
self-check's canaries (crawler.db.rules.canaries).

It also stops 0006's roots_lower_next_due from joining the rows a claim has just
taken to their roots: a claim moves dates later, never earlier.

With both gone to host_hours, `ix_hosts_last_crawled_at` (0006) has no reader
left and goes: every crawl sets last_crawled_at, so while it was indexed no
update of `hosts` could be HOT (bench/churn.py, docs/scaling.md).

Every worker's finish would otherwise update the same row and wait for the
others' commits: a row per hour *and* per backend (pid modulo SHARDS) keeps
concurrent writers apart, and the reader sums them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SHARDS = 8
# webpanel.queries.dashboard.OUTCOME_GROUPS, as of this revision.
GROUPS = {
    "ok": "outcome IN ('OK', 'DNS_ALIVE')",
    "http": "outcome LIKE 'HTTP%'",
    "ignored": "outcome = 'IGNORED'",
}
NETWORK = "NOT (outcome IN ('OK', 'DNS_ALIVE') OR outcome LIKE 'HTTP%' OR outcome = 'IGNORED')"
COUNTS = ("discovered", "ok", "http", "network", "ignored")
LAST_OK = 3  # hosts that answered, newest first: the self-check's canaries


def crawled_columns(row: str) -> str:
    """One 0/1 column per outcome group of `row`'s outcome, in COUNTS order."""
    groups = {**GROUPS, "network": NETWORK}
    return ", ".join(f"({groups[g]})::int".replace("outcome", f"{row}.outcome") for g in COUNTS[1:])


ADD = f"""
        INSERT INTO host_hours AS t (hour, shard, {", ".join(COUNTS)}, last_ok)
        SELECT hour, pg_backend_pid() % {SHARDS}, {", ".join(f"sum({c})" for c in COUNTS)},
               (array_agg(ok_name) FILTER (WHERE ok_name IS NOT NULL))[1:{LAST_OK}]
          FROM ({{counted}}) AS c(hour, {", ".join(COUNTS)}, ok_name)
         GROUP BY hour ORDER BY hour
        ON CONFLICT (hour, shard) DO UPDATE
           SET {", ".join(f"{c} = t.{c} + excluded.{c}" for c in COUNTS)},
               last_ok = (coalesce(excluded.last_ok, ARRAY[]::text[])
                          || coalesce(t.last_ok, ARRAY[]::text[]))[1:{LAST_OK}];
"""
DISCOVERED = (
    "SELECT date_trunc('hour', n.discovered_at, 'UTC'), 1, 0, 0, 0, 0, NULL"
    " FROM new_rows n WHERE n.discovered_at IS NOT NULL"
)
CRAWLED = (
    "SELECT date_trunc('hour', n.last_crawled_at, 'UTC'), 0, {columns},"
    " CASE WHEN n.outcome = 'OK' THEN n.hostname::text END FROM new_rows n {join}"
    " WHERE n.last_crawled_at IS NOT NULL {changed}"
)
CRAWLED_NEW = CRAWLED.format(columns=crawled_columns("n"), join="", changed="")
CRAWLED_AGAIN = CRAWLED.format(
    columns=crawled_columns("n"),
    join="JOIN old_rows o USING (hostname)",
    changed="AND n.last_crawled_at IS DISTINCT FROM o.last_crawled_at",
)

FUNCTIONS = [
    f"""
    CREATE FUNCTION host_hours_count_new() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        {ADD.format(counted=f"{DISCOVERED} UNION ALL {CRAWLED_NEW}")}
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE FUNCTION host_hours_count_crawls() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        {ADD.format(counted=CRAWLED_AGAIN)}
        RETURN NULL;
    END $$
    """,
    # hosts emptied: so is its history.
    """
    CREATE FUNCTION host_hours_forget_all() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM host_hours;
        RETURN NULL;
    END $$
    """,
]
# 0006's roots_lower_next_due, minus the rows this transaction has just claimed: a claim
# only ever moves a row's date later, so a root's lower bound stays true, and the join of
# the claimed rows to their roots found nothing to lower (a tenth of a polite claim).
LOWER_NEXT_DUE = """
    CREATE OR REPLACE FUNCTION roots_lower_next_due() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE roots r SET next_due_at = d.due
          FROM (SELECT root, min(next_claim_at) AS due FROM new_rows
                 WHERE status_reason IS NULL AND denied_by IS NULL
                   AND next_claim_at IS NOT NULL {also}
                 GROUP BY root) d
         WHERE r.root = d.root AND (r.next_due_at IS NULL OR r.next_due_at > d.due);
        RETURN NULL;
    END $$
"""
JUST_CLAIMED = "AND claimed_at IS DISTINCT FROM now()"

# What is already there: a host's discovery, and its latest crawl (the only one kept).
# Also what bench/_growth_data.py runs after a bulk load made with triggers off.
BACKFILL = ADD.format(
    counted=f"{DISCOVERED.replace('new_rows', 'hosts')}"
    f" UNION ALL {CRAWLED_NEW.replace('new_rows', 'hosts')}"
).replace("pg_backend_pid()", "0")

TRIGGERS = {
    "host_hours_count_new": "AFTER INSERT ON hosts REFERENCING NEW TABLE AS new_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION host_hours_count_new()",
    "host_hours_count_crawls": "AFTER UPDATE ON hosts"
    " REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION host_hours_count_crawls()",
    "host_hours_forget_all": "AFTER TRUNCATE ON hosts"
    " FOR EACH STATEMENT EXECUTE FUNCTION host_hours_forget_all()",
}


def upgrade() -> None:
    op.create_table(
        "host_hours",
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("shard", sa.SmallInteger(), nullable=False),
        *(sa.Column(c, sa.Integer(), server_default="0", nullable=False) for c in COUNTS),
        sa.Column("last_ok", postgresql.ARRAY(sa.Text()), nullable=True),
        sa.PrimaryKeyConstraint("hour", "shard", name=op.f("pk_host_hours")),
    )
    for function in FUNCTIONS:
        op.execute(function)
    for name, trigger in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {trigger}")
    op.execute(LOWER_NEXT_DUE.format(also=JUST_CLAIMED))
    op.execute(BACKFILL)
    op.drop_index("ix_hosts_last_crawled_at", table_name="hosts")


def downgrade() -> None:
    op.execute(LOWER_NEXT_DUE.format(also=""))
    op.create_index("ix_hosts_last_crawled_at", "hosts", ["last_crawled_at"])
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER {name} ON hosts")
        op.execute(f"DROP FUNCTION {name}()")
    op.drop_table("host_hours")
