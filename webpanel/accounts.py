"""Operators: the Flask-Login user, and logins throttled per account in the database.

The failure count and the lock live on the users row and are read FOR UPDATE,
so every gunicorn worker sees the same count and two guesses at one account
are checked one after the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from functools import cache

from flask_login import UserMixin
from sqlalchemy import func, select, update

from crawler.db import accounts
from crawler.db.models import User
from crawler.passwords import hash_password, verify_password

WRONG = "Wrong username or password."
LOCKED = "Too many failed logins for this account: try again later."


class Operator(UserMixin):
    """The logged-in operator as Flask-Login sees them."""

    def __init__(self, user_id: int, username: str) -> None:
        self.id = user_id
        self.username = username

    def get_id(self) -> str:
        return str(self.id)


@dataclass(frozen=True)
class Throttle:
    max_failures: int = 5
    lock_seconds: int = 60
    lock_max_seconds: int = 3600

    def lock_for(self, failures: int) -> timedelta | None:
        """How long to lock after `failures` failures in a row (None: not yet)."""
        if failures < self.max_failures:
            return None
        doublings = min(failures - self.max_failures, 20)
        return timedelta(seconds=min(self.lock_seconds * 2**doublings, self.lock_max_seconds))


@dataclass(frozen=True)
class LoginResult:
    operator: Operator | None
    message: str = ""


@cache
def _dummy_hash() -> str:
    """A hash to verify against for unknown usernames, so they cost the same time."""
    return hash_password("no such operator: this hash only burns time")


def authenticate(session, username: str, password: str, throttle: Throttle) -> LoginResult:
    """Check a password; count failures and lock the account after too many."""
    row = session.execute(
        select(
            User.id,
            User.username,
            User.password_hash,
            User.failed_logins,
            User.locked_until,
            func.now().label("now"),
        )
        .where(User.username == username)
        .with_for_update()
    ).first()
    if row is None:
        session.rollback()
        verify_password(_dummy_hash(), password)
        return LoginResult(None, WRONG)
    if row.locked_until is not None and row.locked_until > row.now:
        session.rollback()
        return LoginResult(None, LOCKED)
    if verify_password(row.password_hash, password):
        _record(session, row.id, 0, None)
        return LoginResult(Operator(row.id, row.username))
    failures = row.failed_logins + 1
    lock = throttle.lock_for(failures)
    _record(session, row.id, failures, row.now + lock if lock else None)
    return LoginResult(None, LOCKED if lock else WRONG)


def _record(session, user_id: int, failures: int, locked_until) -> None:
    session.execute(
        update(User)
        .where(User.id == user_id)
        .values(failed_logins=failures, locked_until=locked_until)
    )
    session.commit()


def load_operator(session, user_id: str) -> Operator | None:
    """Flask-Login's user loader: the operator of a session, if they still exist."""
    if not user_id.isdigit():
        return None
    row = accounts.user_by_id(session, int(user_id))
    return Operator(row.id, row.username) if row else None
