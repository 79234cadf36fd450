"""`hostcrawl user`: panel operators."""

from __future__ import annotations

import sys

import click

from crawler.cli.common import _db, friendly_errors


@click.group()
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
