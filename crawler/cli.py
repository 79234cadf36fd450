"""The `hostcrawl` command (DESIGN.md 'Interfaces').

Every command prints what it stored; bad input goes to stderr with the input
and the reason, and the exit status is 1 — never a traceback.
"""

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


@click.group()
def main() -> None:
    """hostcrawl: discover hostnames across the web."""


@main.group()
def db() -> None:
    """The database schema."""


@db.command()
@friendly_errors
def upgrade() -> None:
    """Apply every Alembic migration (to head)."""
    from crawler.db.migrate import upgrade_to_head

    upgrade_to_head()
    click.echo("database schema at head")


@main.command()
@click.argument("hosts", nargs=-1)
@click.option("-f", "--file", "path", type=click.File("r"), help="One hostname per line.")
@friendly_errors
def seed(hosts: tuple[str, ...], path) -> None:
    """Queue HOSTS (and those in FILE) for crawling."""
    values = list(hosts)
    if path is not None:
        values += [line.strip() for line in path if line.strip() and not line.startswith("#")]
    if not values:
        raise click.UsageError("give hostnames or -f FILE")
    report(_db().seed(values))


@main.group("no-follow")
def no_follow() -> None:
    """Operator entries whose hosts are never saved nor crawled."""


@no_follow.command("add")
@click.argument("domains", nargs=-1, required=True)
@click.option("--note", help="Why (kept with the entry and in the audit log).")
@click.option("--force", is_flag=True, help="Accept a bare public suffix such as 'com'.")
@friendly_errors
def no_follow_add(domains: tuple[str, ...], note: str | None, force: bool) -> None:
    """Add DOMAINS to no_follow."""
    report(_db().add_no_follow(domains, note=note, force=force))


@no_follow.command("remove")
@click.argument("domains", nargs=-1, required=True)
@click.option("--note", help="Why (kept in the audit log).")
@friendly_errors
def no_follow_remove(domains: tuple[str, ...], note: str | None) -> None:
    """Remove DOMAINS from no_follow."""
    report(_db().remove_no_follow(domains, note=note))


@no_follow.command("list")
@friendly_errors
def no_follow_list() -> None:
    """Print every no_follow entry (and its note)."""
    for entry in _db().list_entries("no_follow"):
        note = f"\t{entry['note']}" if entry["note"] else ""
        click.echo(f"{entry['hostname']}{note}")


@main.group()
def blocked() -> None:
    """Hosts blocked automatically (subdomain generators)."""


@blocked.command("list")
@friendly_errors
def blocked_list() -> None:
    """Print every blocked host and its blocked_reason."""
    for entry in _db().list_entries("blocked"):
        click.echo(f"{entry['hostname']}\t{entry['blocked_reason']}")


@blocked.command("unblock")
@click.argument("hosts", nargs=-1, required=True)
@click.option("--note", help="Why (kept in the audit log).")
@friendly_errors
def blocked_unblock(hosts: tuple[str, ...], note: str | None) -> None:
    """Unblock HOSTS; the hosts their block took out come back into routing."""
    report(_db().unblock(hosts, note=note))


@main.group()
def user() -> None:
    """Panel operators."""


@user.command("create")
@click.argument("name")
@friendly_errors
def user_create(name: str) -> None:
    """Create operator NAME; the password is read from stdin (or prompted)."""
    if sys.stdin.isatty():
        password = click.prompt("password", hide_input=True, confirmation_prompt=True)
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    _db().create_user(name, password)
    click.echo(f"user {name} created")


@user.command("token")
@click.argument("name")
@friendly_errors
def user_token(name: str) -> None:
    """Print a fresh API token for operator NAME; only its hash is stored, and the
    previous token stops working."""
    import secrets

    from sqlalchemy import text

    from crawler.db.engine import get_engine
    from crawler.db.reports import api_token_hash

    token = secrets.token_urlsafe(32)
    with get_engine().begin() as conn:
        found = conn.execute(
            text("UPDATE users SET api_token_hash = :h WHERE username = :u"),
            {"h": api_token_hash(token), "u": name},
        ).rowcount
    if not found:
        raise ValueError(f"{name!r}: no such user")
    click.echo(token)


if __name__ == "__main__":
    main()
