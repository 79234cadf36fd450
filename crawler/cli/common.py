"""What every hostcrawl command shares: one error style, one way to report changes.

Every error, ours or click's (a usage mistake, an unknown option), is one line
`error: ...` on stderr.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence

import click
from psycopg.errors import UndefinedTable
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError, ProgrammingError

from crawler.core.inputs import note_problem
from crawler.db.operators.bulk import EntryChange

DASH_HINT = "names that start with '-' go after '--', as in: hostcrawl no-follow add -- -name.test"


class Hostcrawl(click.Group):
    """The top group: click's own errors in our style (`error: ...`), not `Error: ...`."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            super().main(args, prog_name, complete_var, False, **extra)
        except click.FileError as exc:
            fail(f"{exc.ui_filename}: cannot open it ({exc.message})", exc.exit_code)
        except click.NoSuchOption as exc:
            fail(f"no such option: {exc.option_name} ({DASH_HINT})", exc.exit_code)
        except click.UsageError as exc:
            path = exc.ctx.command_path if exc.ctx else "hostcrawl"
            fail(f"{exc.format_message()} (see: {path} --help)", exc.exit_code)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except click.Abort:
            fail("aborted", 1)
        sys.exit(0)


def fail(message: str, status: int = 1):
    """The one error style: `error: ...` on stderr, then exit `status`."""
    click.echo(f"error: {message}", err=True)
    sys.exit(status)


ACTOR = "cli"


def engine() -> Engine:
    """The database the command works on (DATABASE_URL, or the embedded one)."""
    from crawler.db.server.engine import get_engine

    return get_engine()


def checked_note(_ctx, _param, note: str | None) -> str | None:
    """--note, refused (exit 1) past crawler.core.inputs' rule: the panel's and the API's."""
    problem = note and note_problem(note)
    if problem:
        raise click.ClickException(f"--note: {problem}")
    return note


def friendly_errors(command: Callable) -> Callable:
    """Turn a database outage or a refusal into one line on stderr and exit 1."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except OperationalError as exc:
            first_line = str(exc.orig or exc).strip().splitlines()[0]
            raise click.ClickException(f"database unavailable: {first_line}") from None
        # psycopg's own UndefinedTable too: a COPY (hosts export) runs on the driver's cursor.
        except (ProgrammingError, UndefinedTable) as exc:
            if not isinstance(getattr(exc, "orig", exc), UndefinedTable):
                raise
            raise click.ClickException(
                "the database has no schema yet: run `hostcrawl db upgrade` first"
            ) from None
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None

    return run


def report(
    changes: Sequence[EntryChange], hint: Callable[[EntryChange], str | None] = lambda c: None
) -> None:
    """Print each change (and its `hint`, if any); refusals to stderr, and exit 1 if there
    was any."""
    for change in changes:
        if change.ok:
            click.echo(change.describe())
            if said := hint(change):
                click.echo(said)
        else:
            click.echo(f"error: {change.describe()}", err=True)
    if not all(change.ok for change in changes):
        sys.exit(1)
