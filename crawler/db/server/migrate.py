"""Alembic from code: the CLI's `db upgrade` and the tests use the same history."""

from __future__ import annotations

import os
from dataclasses import dataclass

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, make_url
from sqlalchemy.pool import NullPool

from crawler.core import config
from crawler.db.server import cluster
from crawler.db.server.engine import PROJECT_ROOT, checked_database_url, database_url, var_dir

MIGRATIONS = PROJECT_ROOT / "migrations"


def alembic_config() -> Config:
    config = Config(str(PROJECT_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["configure_logging"] = False
    return config


def upgrade_to_head() -> cluster.Topology:
    """Every migration, then (on a Citus cluster) the per-root tables distributed by root."""
    command.upgrade(alembic_config(), "head")
    engine = create_engine(database_url(), poolclass=NullPool)
    try:
        return cluster.distribute(engine)
    finally:
        engine.dispose()


def current_deployment() -> cluster.Topology:
    engine = create_engine(database_url(), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return cluster.topology(conn)
    finally:
        engine.dispose()


@dataclass(frozen=True)
class SchemaState:
    """Where the database's schema is: its revision (None: never migrated) and head."""

    current: str | None
    head: str

    @property
    def at_head(self) -> bool:
        return self.current == self.head

    def describe(self) -> str:
        if self.at_head:
            return f"schema at head ({self.head})"
        now = "no schema yet" if self.current is None else f"schema at {self.current}"
        return f"{now}, head is {self.head}: run `hostcrawl db upgrade`"


def schema_state() -> SchemaState:
    """The database's Alembic revision, beside the newest one in migrations/."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    engine = create_engine(database_url(), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
    return SchemaState(current, head)


def database_name() -> str:
    """Which database the CLI works on: the embedded server (its folder), or DATABASE_URL
    without its password."""
    url = config.from_environment("DATABASE_URL", os.environ)
    if not url:
        return f"the embedded Postgres in {var_dir() / 'pg'}"
    shown = make_url(checked_database_url(url)).render_as_string(hide_password=True)
    return f"DATABASE_URL {shown}"


def downgrade_to_base() -> None:
    command.downgrade(alembic_config(), "base")


def check() -> None:
    """Raise if the models and the migrated database differ."""
    command.check(alembic_config())
