"""`hostcrawl db`: the schema."""

from __future__ import annotations

import sys

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
    """Which database (the embedded one, or DATABASE_URL), which deployment (one
    Postgres server, or a Citus cluster), and whether its schema is at head; exit 1
    when it is not."""
    from crawler.db.migrate import current_deployment, database_name, schema_state

    click.echo(f"database: {database_name()}")
    click.echo(current_deployment().describe())
    state = schema_state()
    click.echo(state.describe())
    if not state.at_head:
        sys.exit(1)
