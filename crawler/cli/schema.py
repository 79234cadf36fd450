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
    Postgres server, or a Citus cluster), its server settings against docs/scaling.md's
    advice, and whether its schema is at head; exit 1 when it is not."""
    from crawler.db.migrate import current_deployment, database_name, schema_state

    click.echo(f"database: {database_name()}")
    click.echo(current_deployment().describe())
    server_advice_lines()
    state = schema_state()
    click.echo(state.describe())
    if not state.at_head:
        sys.exit(1)


def server_advice_lines() -> None:
    """The embedded server: what it was given on start. A server behind DATABASE_URL: each
    setting of it that falls short of docs/scaling.md's advice (changed by its owner only)."""
    from crawler.db.engine import database_url, embedded_tuning
    from crawler.db.server_settings import shortfalls

    tuning = embedded_tuning()
    if tuning is not None:
        click.echo(tuning.describe())
        return
    found = shortfalls(database_url())
    if not found:
        click.echo("server settings: as docs/scaling.md advises")
        return
    click.echo(f"server settings short of docs/scaling.md's advice ({len(found)}):")
    for shortfall in found:
        click.echo(f"  {shortfall.describe()}")
