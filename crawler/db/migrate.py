"""Alembic from code: the CLI's `db upgrade` and the tests use the same history."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from crawler.db import cluster
from crawler.db.engine import PROJECT_ROOT, database_url

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


def downgrade_to_base() -> None:
    command.downgrade(alembic_config(), "base")


def check() -> None:
    """Raise if the models and the migrated database differ."""
    command.check(alembic_config())
