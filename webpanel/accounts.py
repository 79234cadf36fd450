"""Operators as Flask-Login sees them, the login check, and the bound on Argon2 checks.

Failed logins slow down per (account, client address) and per address, in the
database (crawler.db.accounts), so every gunicorn worker sees the same counts;
no account is ever locked. Unknown, disabled and known usernames take the same
path: the same queries, one Argon2 check, the same message.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flask_login import UserMixin

from crawler.core.passwords import dummy_hash, verify_password
from crawler.db import accounts

WRONG = "Wrong username or password."
SLOW_DOWN = "Too many failed logins: try again in {} s."
BUSY = "The panel is checking other logins: try again in a moment."


class Operator(UserMixin):
    """The logged-in operator as Flask-Login sees them."""

    def __init__(self, user_id: int, username: str, role: str, generation: int) -> None:
        self.id = user_id
        self.username = username
        self.role = role
        self.generation = generation

    @property
    def is_admin(self) -> bool:
        return self.role == accounts.ADMIN

    def get_id(self) -> str:
        """The session's key: with the generation in it, raising the generation (logout,
        a new password, disabling) ends every session made before (Flask-Login's
        "alternative tokens")."""
        return f"{self.id}.{self.generation}"


class HashSlots:
    """At most `size` Argon2 checks at once in this process; the rest are told to come
    back at once rather than queue up behind them (and starve every other request)."""

    def __init__(self, size: int) -> None:
        self._free = threading.BoundedSemaphore(size)

    @contextmanager
    def slot(self) -> Iterator[bool]:
        """True inside when a slot was free (and is held until the block ends)."""
        got = self._free.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                self._free.release()


@dataclass(frozen=True)
class LoginResult:
    operator: Operator | None
    message: str = ""
    retry_after: int = 0  # > 0: refused before any check; the answer is 429


def authenticate(
    session,
    username: str,
    password: str,
    address: str,
    policy: accounts.LoginPolicy,
    slots: HashSlots,
) -> LoginResult:
    """Check a password; a failure is counted for (username, address) and for address.

    A free Argon2 slot is taken first: the rest of a burst is turned away before it
    costs even a query. The slot is held through the throttle check and the hash.
    """
    with slots.slot() as free:
        if not free:
            return LoginResult(None, BUSY, retry_after=1)
        wait = accounts.login_wait(session, username, address, policy)
        if wait > 0:
            session.rollback()
            seconds = math.ceil(wait)
            return LoginResult(None, SLOW_DOWN.format(seconds), retry_after=seconds)
        row = accounts.user_for_login(session, username)
        session.rollback()  # no transaction held across the Argon2 check
        usable = row is not None and not row.disabled
        good = verify_password(row.password_hash if usable else dummy_hash(), password)
    if usable and good:
        accounts.forget_login_failures(session, username, address)
        session.commit()
        return LoginResult(Operator(row.id, row.username, row.role, row.session_generation))
    accounts.record_login_failure(session, username, address)
    session.commit()
    return LoginResult(None, WRONG)


def load_operator(session, session_id: str) -> Operator | None:
    """Flask-Login's user loader: the operator of a session, while it is still theirs
    (the account exists, is enabled, and its session generation is the session's)."""
    user_id, _, generation = session_id.partition(".")
    if not user_id.isdigit() or not generation.isdigit():
        return None
    row = accounts.user_by_id(session, int(user_id))
    if row is None or row.session_generation != int(generation):
        return None
    return Operator(row.id, row.username, row.role, row.session_generation)
