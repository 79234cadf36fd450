"""`make demo`'s operator: made or reused in the demo's own database, before the crawl.

The demo's database is not the operator's (tests/fakeweb/demo.py): an operator made for
`make run` cannot log in here. On a terminal the demo offers to create one (a name, then
the password twice), or to reuse those already there; without a terminal (a script, CI)
it asks nothing and says how to make one.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable

from crawler.db.operators import accounts


def create_command(database_url: str) -> str:
    """The CLI command that makes an operator in the demo's database."""
    return f"DATABASE_URL='{database_url}' .venv/bin/hostcrawl user create NAME"


def offer_operator(
    engine,
    database_url: str,
    ask: Callable[[str], str] = input,
    secret: Callable[[str], str] = getpass.getpass,
    terminal: bool | None = None,
) -> list[str]:
    """The demo database's operators after the offer (their names), each step said."""
    terminal = sys.stdin.isatty() if terminal is None else terminal
    names = [row.username for row in accounts.list_users(engine)]
    if names:
        print(f"  operators in the demo's database: {', '.join(names)} (log in as one)")
    if not terminal:
        if not names:
            print(
                "  no operator in the demo's database, and stdin is not a terminal, so no"
                f" prompt: create one with {create_command(database_url)}"
            )
        return names
    wanted = "another operator" if names else "an operator for the demo's panel"
    name = ask(f"  create {wanted}? name (Enter: {'reuse' if names else 'skip'}): ").strip()
    if not name:
        return names
    password = secret("  password: ")
    if secret("  the same password again: ") != password:
        print(f"  the two entries differ; no operator made (later: {create_command(database_url)})")
        return names
    try:
        accounts.create_user(engine, name, password)
    except ValueError as exc:
        print(f"  error: {exc}; no operator made (later: {create_command(database_url)})")
        return names
    print(f"  operator {name} created in the demo's database")
    return [*names, name]
