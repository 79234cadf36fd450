"""Alembic from code: the CLI's `db upgrade` and the tests use the same history."""

from __future__ import annotations

from alembic import command
from alembic.config import Config

from crawler.db.engine import PROJECT_ROOT

MIGRATIONS = PROJECT_ROOT / "migrations"


def alembic_config() -> Config:
    config = Config(str(PROJECT_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["configure_logging"] = False
    return config


def upgrade_to_head() -> None:
    command.upgrade(alembic_config(), "head")


def downgrade_to_base() -> None:
    command.downgrade(alembic_config(), "base")


def check() -> None:
    """Raise if the models and the migrated database differ."""
    command.check(alembic_config())
