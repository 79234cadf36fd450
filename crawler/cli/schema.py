"""`hostcrawl db`: the schema."""

from __future__ import annotations

import click

from crawler.cli.common import friendly_errors


@click.group()
def db() -> None:
    """The database schema."""


@db.command()
@friendly_errors
def upgrade() -> None:
    """Apply every Alembic migration (to head)."""
    from crawler.db.migrate import upgrade_to_head

    found = upgrade_to_head()
    click.echo(f"database schema at head, on {found.describe()}")


@db.command()
@friendly_errors
def status() -> None:
    """Which deployment the database is: one Postgres server, or a Citus cluster."""
    from crawler.db.migrate import current_deployment

    click.echo(current_deployment().describe())
