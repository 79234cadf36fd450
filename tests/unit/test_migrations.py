"""Alembic: up to head on an empty database, no drift, down to base and up again."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from crawler.db import migrate
from crawler.db.models import Base


@pytest.fixture
def empty_database_url(engine, monkeypatch):
    """A fresh database on the test server, dropped afterwards; named after this test
    process's own (under TEST_DATABASE_URL the server is shared, and test_functions
    uses this fixture too)."""
    name = f"{engine.url.database}_migrations"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(str(engine.url.render_as_string(hide_password=False))).set(database=name)
    monkeypatch.setenv("DATABASE_URL", url.render_as_string(hide_password=False))
    yield url
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def tables(url) -> set[str]:
    probe = create_engine(url)
    try:
        return set(inspect(probe).get_table_names())
    finally:
        probe.dispose()


def test_upgrade_check_downgrade_upgrade(empty_database_url):
    assert tables(empty_database_url) == set()
    migrate.upgrade_to_head()
    assert set(Base.metadata.tables) <= tables(empty_database_url)
    migrate.check()  # raises on any drift between models and database
    migrate.downgrade_to_base()
    assert tables(empty_database_url) == {"alembic_version"}
    migrate.upgrade_to_head()
    migrate.check()


def test_the_schema_at_head_has_no_trigger(db):
    """Citus refuses triggers on distributed tables: the writers keep roots and host_hours
    (crawler.db.rollups). Foreign keys' own (internal) triggers are not ours."""
    with db.connect() as conn:
        ours = conn.execute(text("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"))
        assert list(ours.scalars()) == []
