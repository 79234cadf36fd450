"""What every hostcrawl command shares: one error style, one way to report changes."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence

import click
from sqlalchemy.exc import OperationalError

from crawler.db.database import Database, EntryChange


def _db() -> Database:
    return Database(actor="cli")


def friendly_errors(command: Callable) -> Callable:
    """Turn a database outage or a refusal into one line on stderr and exit 1."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except OperationalError as exc:
            first_line = str(exc.orig or exc).strip().splitlines()[0]
            raise click.ClickException(f"database unavailable: {first_line}") from None
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None

    return run


def report(changes: Sequence[EntryChange]) -> None:
    """Print each change; refusals to stderr, and exit 1 if there was any."""
    for change in changes:
        if change.ok:
            click.echo(change.describe())
        else:
            click.echo(f"error: {change.describe()}", err=True)
    if not all(change.ok for change in changes):
        sys.exit(1)
