"""Shared fixtures: a throwaway embedded Postgres (or TEST_DATABASE_URL), migrated once."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from crawler.db.crawl import known_names, rollups
from crawler.db.models import Base
from tests.fakeweb.world import ALLOWED_NETWORKS

pytest_plugins = ["tests.fakeweb.fixtures", "tests.citus_fixtures"]

# The tests' names are under .test, which the crawler saves only as a local suffix: set
# for this process (the core reads os.environ when asked) and every crawler it starts.
os.environ["LOCAL_SUFFIXES"] = "test"
# fakeweb serves on loopback addresses, which the crawler refuses unless told: its web's
# are let through, its internal service's (127.0.0.9) is not.
os.environ["ALLOWED_PRIVATE_NETWORKS"] = ALLOWED_NETWORKS
# The embedded servers the tests start (one per xdist worker, and the few a test starts
# itself) are sized for 512 MB, not for this machine less its workers: several run at
# once beside the Citus nodes, and 512 MB gives Postgres's own 128 MB of shared_buffers,
# which needs no restart on start.
os.environ["EMBEDDED_DATABASE_MEMORY_MB"] = "512"

# Every table of the schema: a test starts from nothing, whatever the last one left.
TABLE_NAMES = [table.name for table in Base.metadata.sorted_tables]

# The tables a test may have left something in: rows, or a sequence of theirs that gave
# out a number since it was last restarted (pg_sequences.last_value is NULL until then).
# Only those are truncated: TRUNCATE costs for every table named, even an empty one (on
# a cluster, every shard of it on every node), and most tests touch a few tables.
TOUCHED_TABLES = text(
    " UNION ".join(f"(SELECT '{name}' FROM {name} LIMIT 1)" for name in TABLE_NAMES)
    + " UNION SELECT t.relname::text FROM pg_depend d"
    " JOIN pg_class q ON q.oid = d.objid AND q.relkind = 'S'"
    " JOIN pg_class t ON t.oid = d.refobjid"
    " JOIN pg_sequences s ON s.schemaname = current_schema() AND s.sequencename = q.relname"
    " WHERE d.deptype IN ('a', 'i') AND s.last_value IS NOT NULL"
)


@pytest.fixture(scope="session")
def embedded_pgdata() -> Path | None:
    """The data folder of the session's embedded Postgres (None with TEST_DATABASE_URL)."""
    if os.environ.get("TEST_DATABASE_URL"):
        return None
    return Path(tempfile.mkdtemp(prefix="hostcrawl-test-")) / "pg"


def database_of_worker(url: str, worker: str) -> str:
    """Under pytest-xdist, each worker its own database on the TEST_DATABASE_URL server
    (made if missing): the tests empty every table, and must not empty each other's."""
    from sqlalchemy.engine import make_url

    server = make_url(url)
    name = f"{server.database or 'postgres'}_{worker}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        exists = text("SELECT 1 FROM pg_database WHERE datname = :name")
        if conn.execute(exists, {"name": name}).scalar() is None:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return server.set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def database_url(embedded_pgdata, worker_id) -> str:
    """A migrated database for this test session; subprocesses get it via DATABASE_URL."""
    url = os.environ.get("TEST_DATABASE_URL")
    if url and worker_id != "master":
        url = database_of_worker(url, worker_id)
    if embedded_pgdata is not None:
        from crawler.db.server.engine import embedded_server_url

        url = embedded_server_url(embedded_pgdata, cleanup_mode="delete")
    os.environ["DATABASE_URL"] = url
    from crawler.db.server.migrate import upgrade_to_head

    upgrade_to_head()
    return url


@pytest.fixture(scope="session")
def engine(database_url):
    engine = create_engine(database_url, pool_size=10, pool_pre_ping=True)
    yield engine
    engine.dispose()


def empty_tables(engine) -> None:
    """Every table emptied, ids restarted (the schema stays)."""
    with engine.begin() as conn:
        touched = sorted(set(conn.execute(TOUCHED_TABLES).scalars()) & set(TABLE_NAMES))
        if touched:
            conn.execute(text(f"TRUNCATE {', '.join(touched)} RESTART IDENTITY CASCADE"))
    known_names.forget_all()  # the names this process knew in the tables are gone


@pytest.fixture
def clean_db(engine):
    """An empty schema for one test."""
    empty_tables(engine)
    return engine


@pytest.fixture
def db(clean_db):
    """The engine of an empty schema: the crawler.db modules take it as their first argument."""
    return clean_db


def insert_stale_row(engine, hostname: str, root: str) -> None:
    """A due row saved by a worker whose deny list was stale (nothing took it out)."""
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO hosts (hostname, root, next_claim_at) VALUES (:h, :r, now())"),
            {"h": hostname, "r": root},
        )
        rollups.count_hosts(conn, new=[root])
        rollups.lower_next_due(conn, [(root, conn.execute(text("SELECT now()")).scalar_one())])
