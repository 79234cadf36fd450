"""`hostcrawl user`: panel operators."""

from __future__ import annotations

import sys
from functools import partial

import click

from crawler.cli.common import engine, friendly_errors
from crawler.core.passwords import ROLES
from crawler.core.words import counted
from crawler.db.operators import accounts


@click.group()
def user() -> None:
    """Panel operators."""


def read_password() -> str:
    """A new password: prompted twice on a terminal, else the first line of stdin."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first = click.prompt("password", hide_input=True)
    if click.prompt("the same password again", hide_input=True) != first:
        raise click.ClickException("password: the two entries differ; nothing was stored")
    return first


@user.command("create")
@click.argument("name")
@click.option(
    "--role",
    type=click.Choice(ROLES),
    default="admin",
    show_default=True,
    help="admin: everything; viewer: read-only pages and GET API calls.",
)
@friendly_errors
def user_create(name: str, role: str) -> None:
    """Create operator NAME; the password is read from stdin (or prompted)."""
    accounts.create_user(engine(), name, read_password(), role=role)
    click.echo(f"user {name} created ({role})")


@user.command("token")
@click.argument("name")
@click.option("--revoke", is_flag=True, help="End NAME's token and print none.")
@friendly_errors
def user_token(name: str, revoke: bool) -> None:
    """Print a fresh API token for operator NAME; only its hash is stored, and the
    previous token stops working. A new password or `user disable` revokes it too."""
    if revoke:
        accounts.revoke_api_token(engine(), name)
        click.echo(f"API token of {name} revoked")
        return
    click.echo(accounts.new_api_token(engine(), name))


@user.command("list")
@friendly_errors
def user_list() -> None:
    """Every operator: name, role, state, API token, failed logins in the last day."""
    for row in accounts.list_users(engine()):
        state = f"disabled {row.disabled_at:%Y-%m-%d %H:%M}" if row.disabled_at else "enabled"
        token = "token" if row.has_token else "no token"
        failed = counted(row.failed_logins, "failed login")
        click.echo(f"{row.username}\t{row.role}\t{state}\t{token}\t{failed}")


def operator_command(name: str, change, said: str, help_text: str) -> click.Command:
    """`hostcrawl user NAME_OF_COMMAND NAME`: `change(engine, name)`, then `said`."""

    @user.command(name, help=help_text)
    @click.argument("name")
    @friendly_errors
    def command(name: str) -> None:
        change(engine(), name)
        click.echo(said.format(name=name))

    return command


user_disable = operator_command(
    "disable",
    partial(accounts.set_disabled, disabled=True),
    "user {name} disabled; their sessions ended and their API token is revoked",
    "Disable NAME: no login; their sessions end and their API token is revoked.",
)
user_enable = operator_command(
    "enable",
    partial(accounts.set_disabled, disabled=False),
    "user {name} enabled",
    "Enable NAME again (their old sessions and API token stay ended).",
)
user_unlock = operator_command(
    "unlock",
    accounts.unlock,
    "failed logins of {name} forgotten",
    "Forget NAME's failed logins from every address, so no wait slows them down.",
)
user_delete = operator_command(
    "delete",
    accounts.delete_user,
    "user {name} deleted",
    "Delete operator NAME (their entries' audit lines keep the name).",
)


@user.command("password")
@click.argument("name")
@friendly_errors
def user_password(name: str) -> None:
    """Set NAME's password (from stdin, or prompted); every session of NAME ends and
    their API token is revoked."""
    accounts.set_password(engine(), name, read_password())
    click.echo(f"password of {name} changed; their sessions ended, their API token revoked")
