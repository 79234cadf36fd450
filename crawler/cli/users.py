"""`hostcrawl user`: panel operators."""

from __future__ import annotations

import sys

import click

from crawler.cli.common import engine, friendly_errors
from crawler.db import accounts


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
    accounts.create_user(engine(), name, password)
    click.echo(f"user {name} created")


@user.command("token")
@click.argument("name")
@friendly_errors
def user_token(name: str) -> None:
    """Print a fresh API token for operator NAME; only its hash is stored, and the
    previous token stops working."""
    token = accounts.new_api_token(engine(), name)
    click.echo(token)
