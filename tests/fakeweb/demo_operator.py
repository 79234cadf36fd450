"""`make demo`'s operator: in the demo's own database, before the crawl, so the panel it
serves can be logged in to (issue 53, item 5).

The demo's database is not the operator's (tests/fakeweb/demo.py), so the demo offers
what `make run`'s database holds: its operators are copied over with their password
hashes (the same names, the same passwords). On a terminal it asks first, and, when no
operator is there after that, offers to create one (a name, the password twice).
Without a terminal (a script, CI) it asks nothing: it copies `make run`'s operators, or,
with none, makes `demo` with a random password. How to log in is said with the panel's
address once the panel answers (`Login.words`), never as a command to run later: the
demo's database is gone with the demo.
"""

from __future__ import annotations

import getpass
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from crawler.db.operators import accounts
from crawler.db.server.engine import CONNECT_ARGS
from crawler.db.server.retry import first_line

DEMO_OPERATOR = "demo"
ENABLED = text(
    "SELECT username, password_hash, role FROM users WHERE disabled_at IS NULL ORDER BY username"
)
COPY = text(
    "INSERT INTO users (username, password_hash, role) VALUES (:username, :password_hash, :role)"
    " ON CONFLICT (username) DO NOTHING"
)


@dataclass
class Login:
    """Who can log in to the demo's panel: names with the passwords their owner knows, and
    one made here with its password (said, as the owner does not know it)."""

    known: list[str]
    made: tuple[str, str] | None = None

    def words(self) -> str:
        said = []
        if self.known:
            said.append(f"log in as {' or '.join(self.known)} (your own password)")
        if self.made:
            said.append(f"log in as {self.made[0]}, password {self.made[1]}")
        return "; or ".join(said) or "no operator to log in as (none was made)"


def run_operators(run_database_url: str | None) -> list:
    """`make run`'s enabled operators (name, password hash, role), or [] when it has no
    database yet or it cannot be read (said)."""
    if run_database_url is None:
        return []
    engine = create_engine(run_database_url, poolclass=NullPool, connect_args=CONNECT_ARGS)
    try:
        with engine.connect() as conn:
            return conn.execute(ENABLED).all()
    except SQLAlchemyError as exc:
        print(f"  make run's database could not be read ({first_line(exc)}): no operator copied")
        return []
    finally:
        engine.dispose()


def offer_operator(
    engine,
    run_database_url: str | None,
    ask: Callable[[str], str] = input,
    secret: Callable[[str], str] = getpass.getpass,
    terminal: bool | None = None,
) -> Login:
    """Copy `make run`'s operators, or create one, in the demo's database; each step said."""
    terminal = sys.stdin.isatty() if terminal is None else terminal
    names = [row.username for row in accounts.list_users(engine)]
    if names:
        print(f"  operators already in the demo's database: {', '.join(names)}")
    theirs = [row for row in run_operators(run_database_url) if row.username not in names]
    if theirs and (not terminal or wants_them(ask, theirs)):
        with engine.begin() as conn:
            conn.execute(COPY, [row._asdict() for row in theirs])
        copied = [row.username for row in theirs]
        print(f"  copied make run's operators {', '.join(copied)} (their passwords)")
        names += copied
    if names:
        return Login(names)
    if terminal:
        return Login([name]) if (name := create_asked(engine, ask, secret)) else made(engine)
    return made(engine)


def wants_them(ask: Callable[[str], str], theirs: list) -> bool:
    listed = ", ".join(row.username for row in theirs)
    answer = ask(f"  use make run's operators {listed} here, with their passwords? [Y/n] ")
    return answer.strip().lower() in ("", "y", "yes")


def create_asked(engine, ask: Callable[[str], str], secret: Callable[[str], str]) -> str | None:
    """An operator named and given a password at the terminal; None: Enter, or refused."""
    name = ask(f"  create an operator for the demo's panel? name (Enter: {DEMO_OPERATOR}): ")
    if not name.strip():
        return None
    password = secret("  password: ")
    if secret("  the same password again: ") != password:
        print("  the two entries differ; no operator made")
        return None
    try:
        accounts.create_user(engine, name.strip(), password)
    except ValueError as exc:
        print(f"  error: {exc}; no operator made")
        return None
    print(f"  operator {name.strip()} created in the demo's database")
    return name.strip()


def made(engine) -> Login:
    """`demo` with a random password (told with the panel's address)."""
    password = secrets.token_urlsafe(12)
    try:
        accounts.create_user(engine, DEMO_OPERATOR, password)
    except ValueError:  # there since a previous demo, disabled: a new password
        accounts.set_password(engine, DEMO_OPERATOR, password)
        accounts.set_disabled(engine, DEMO_OPERATOR, False)
    print(f"  operator {DEMO_OPERATOR} made in the demo's database (its password comes below)")
    return Login([], (DEMO_OPERATOR, password))
