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

    upgrade_to_head()
    click.echo("database schema at head")
