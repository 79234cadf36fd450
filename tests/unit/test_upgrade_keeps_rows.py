"""An upgrade in place loses nothing: a database at the previous head with rows in every
table (hosts crawled and not, deny entries of both rules and the rows they took, trap
windows, deferrals, users, the change log, silences ...), upgraded to head, holds every
row and every value it held; only the indexes the new migrations move are renamed. The
rows are written at head by this code's writers and taken back to the previous head by
its downgrade (0030 changes where the writers write). On one server (a database of its
own) and on the cluster."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from crawler.db.crawl import queue
from crawler.db.crawl.queue import CrawlResult
from crawler.db.models import Base
from crawler.db.operators import accounts, bulk
from crawler.db.rules import deny_entries
from crawler.db.server import cluster, migrate
from tests.dbhelpers import finish, record_outcomes

PREVIOUS = "0029"
# 0030: the queue's columns move into hosts, its table becomes a view of them.
ROUTING = (
    "next_claim_at",
    "status_reason",
    "blocked_reason",
    "blocked_at",
    "note",
    "denied_by",
    "claimed_by",
    "claimed_at",
    "unfinished_claims",
)
MOVED = {("hosts", column) for column in ROUTING}  # compared through the queue, as it reads
QUEUE_INDEXES = (
    "root_due",
    "root_claimed",
    "due",
    "entries",
    "denied_by",
    "reversed",
    "shown",
    "hidden_root",
    "hidden_sample",
)
# 0031: the list's sorts by date get an index over the shown rows in the page's order.
DROPPED = {"pk_queue", "ix_hosts_discovered_at"} | {f"ix_queue_{name}" for name in QUEUE_INDEXES}
CREATED = {"ix_hosts_shown_by_date"} | {f"ix_hosts_{name}" for name in QUEUE_INDEXES}
# Every table of the schema, and the queue (a table at PREVIOUS, a view at head).
RELATIONS = [*Base.metadata.tables, "queue"]

# The tables no writer below fills, one row each, as their writers would put it.
ROWS = [
    "INSERT INTO crawl_workers (name, host, pid, started_at, pages, pages_per_s, in_flight)"
    " VALUES ('w1', 'box', 42, now(), 1234, 5.5, 3)",
    "INSERT INTO world_silences (worker, since, never_answered, held_back, layer, tries,"
    " failures, top_error, top_count, span_s, settings_to_check)"
    " VALUES ('w1', now(), false, 7, 'dns', 20, 20, 'DNS_TIMEOUT', 20, 30.5, 'DNS_SERVERS')",
    "INSERT INTO wildcard_probes (root, probe, outcome)"
    " VALUES ('trap.test', 'hc-x.trap.test', 'DNS_NXDOMAIN')",
    "INSERT INTO trap_deferrals (root, why) VALUES ('calm.test', 'the world did not confirm')",
    "INSERT INTO root_claims (root, minute, claimed) VALUES ('seeded.test', now(), 4)",
    "INSERT INTO login_failures (username, address, failures, last_failed_at)"
    " VALUES ('alice', '127.0.0.1', 2, now())",
    "INSERT INTO host_minutes (minute, shard, crawled, discovered, dns, address, tcp, tls, http)"
    # A minute before the writers' own rows of this minute (the same key otherwise).
    " VALUES (date_trunc('minute', now()) - interval '5 minutes', 0, 5, 9, 1, 0, 1, 0, 2)",
    "INSERT INTO dropped_links (hostname, root, links) VALUES ('a.seeded.test', 'seeded.test', 3)",
]


def fill(engine) -> None:
    """Rows in every table, by the crawler's own writers where it has them."""
    seeded = [f"{s}.seeded.test" for s in ("a", "b", "c", "www")] + ["seeded.test", "calm.test"]
    bulk.collect(bulk.seed(engine, seeded + [f"h{i}.trap.test" for i in range(60)]))
    links = ["https://new.example.test/", "https://x.seeded.test/a"]
    finish(engine, "a.seeded.test", CrawlResult("OK", 200, "https://a.seeded.test/", "A"), links)
    finish(engine, "b.seeded.test", CrawlResult("DNS_NXDOMAIN"))
    queue.save_hosts(engine, ["under.listed.test", "listed.test"])
    deny_entries.add_no_follow(engine, ["listed.test", "never-seen.test"], actor="alice")
    record_outcomes(engine, [(f"h{i}.trap.test", "DNS_NXDOMAIN") for i in range(60)])
    accounts.create_user(engine, "alice", "a long enough password")
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE hosts SET held_tries = 1, held_at = now() WHERE hostname = 'calm.test'")
        )
        for row in ROWS:
            conn.execute(text(row))
    empty = [t for t in Base.metadata.tables if not count(engine, t)]
    assert not empty, f"no row in {empty}: fill them too"


def count(engine, table: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()


COLUMNS = text(
    "SELECT column_name FROM information_schema.columns"
    " WHERE table_schema = current_schema() AND table_name = :t ORDER BY ordinal_position"
)


def dump(engine) -> dict[str, list[tuple]]:
    """Every row of every table and of the queue, each value as text, in one order (the
    queue's columns that 0030 moves into hosts read through the queue)."""
    rows = {}
    with engine.connect() as conn:
        for table in RELATIONS:
            names = sorted(conn.execute(COLUMNS, {"t": table}).scalars())  # as named
            kept = ", ".join(f'"{c}"' for c in names if (table, c) not in MOVED)
            found = conn.execute(text(f"SELECT ({kept})::text FROM {table} ORDER BY 1"))
            rows[table] = found.scalars().all()
    return rows


def indexes(engine) -> set[str]:
    with engine.connect() as conn:
        names = conn.execute(text("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"))
        return set(names.scalars())


def head() -> str:
    return ScriptDirectory.from_config(migrate.alembic_config()).get_current_head()


def test_the_migrations_after_the_previous_head_are_the_ones_this_test_knows():
    script = ScriptDirectory.from_config(migrate.alembic_config())
    newer = [r.revision for r in script.iterate_revisions(head(), PREVIOUS)]
    assert newer == ["0031", "0030"], "a new migration: move PREVIOUS on, say what it moves"


def upgraded_in_place(engine) -> None:
    """Fill the database at head by this code's writers, take it back to PREVIOUS (0030's
    downgrade makes the queue table of its day from the rows), and upgrade it to head
    again: the same rows and values, the queue's indexes on hosts."""
    fill(engine)
    command.downgrade(migrate.alembic_config(), PREVIOUS)
    before, indexed = dump(engine), indexes(engine)
    assert indexed >= DROPPED and not indexed & CREATED
    migrate.upgrade_to_head()
    assert dump(engine) == before
    assert indexes(engine) == indexed - DROPPED | CREATED


@pytest.fixture
def new_database(engine, monkeypatch):
    """A database of its own on the test server, migrated to head (dropped after); named
    after this test process's own (under TEST_DATABASE_URL the server is shared)."""
    name = f"{engine.url.database}_upgrade"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(engine.url.render_as_string(hide_password=False)).set(database=name)
    monkeypatch.setenv("DATABASE_URL", url.render_as_string(hide_password=False))
    migrate.upgrade_to_head()
    database = create_engine(url)
    yield database
    database.dispose()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_an_upgrade_from_the_previous_head_keeps_every_row(new_database):
    upgraded_in_place(new_database)


def test_an_upgrade_of_the_cluster_keeps_every_row(cluster_db):
    """The session's cluster, emptied, filled, taken back to PREVIOUS (its tables stay
    distributed, the queue's distributed again), and brought up to head again, whatever
    happens."""
    with cluster_db.connect() as conn:
        assert cluster.topology(conn).distributed
    try:
        upgraded_in_place(cluster_db)
    finally:
        migrate.upgrade_to_head()
