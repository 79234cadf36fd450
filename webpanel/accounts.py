"""Operators as Flask-Login sees them, and the login check.

Failed logins slow down per (account, client address), per address and per
account, in the database (crawler.db.operators.accounts), so every gunicorn worker sees
the same counts; no account is ever locked. The slow-down is decided before
anything else: a login it refuses costs one query, no password check and no
place in the queue for one (webpanel.login_queue). Unknown, disabled and known
usernames take the same path: the same queries, one Argon2 check, the same message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from flask_login import UserMixin

from crawler.core.passwords import dummy_hash, verify_password
from crawler.db.operators import accounts
from webpanel.login_queue import (
    CLEAN_ADDRESS,
    FAILED_ADDRESS,
    FULL,
    GRANTED,
    KNOWN_DEVICE,
    CheckRunner,
    FairQueue,
)

WRONG = "Wrong username or password."
SLOW_DOWN = "Too many failed logins: try again in {} s."
ACCOUNT_SLOW_DOWN = (
    "Too many failed logins for this account from elsewhere: try again in {} s, or from a"
    " browser that has logged in to it before."
)
CROWDED = "Logins from your address are already waiting: try again in a moment."
BUSY = "The panel is busy checking other logins: try again in a moment."


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


class PasswordChecks:
    """This process's password checks: the fair queue for them and the threads they run on."""

    def __init__(self, slots: int) -> None:
        self.queue = FairQueue(slots)
        self.runner = CheckRunner(slots)


@dataclass(frozen=True)
class LoginResult:
    operator: Operator | None
    message: str = ""
    retry_after: int = 0  # > 0: refused before any check; the answer is 429
    slowed_down: bool = False  # refused for failed logins (not for a crowded queue)


def authenticate(
    session,
    username: str,
    password: str,
    address: str,
    policy: accounts.LoginPolicy,
    checks: PasswordChecks,
    known_device: bool = False,
) -> LoginResult:
    """Check a password; a failure is counted for (username, address), address and username.

    The slow-down is asked before the queue and again once this login's turn has
    come (the address's earlier logins may have failed meanwhile). `known_device`
    (webpanel.devices): the browser has logged in to this account before, so the
    account-wide count does not slow it and it goes in the queue's first lane.
    """
    wait = accounts.login_wait(session, username, address, policy, known_device)
    session.rollback()  # no connection held while the login waits for its turn
    if wait.seconds > 0:
        return throttled(wait)
    with checks.queue.turn(address, queue_lane(known_device, wait)) as turn:
        if turn != GRANTED:
            return LoginResult(None, CROWDED if turn == FULL else BUSY, retry_after=1)
        wait = accounts.login_wait(session, username, address, policy, known_device)
        row = accounts.user_for_login(session, username)
        session.rollback()  # no transaction held across the Argon2 check
        if wait.seconds > 0:
            return throttled(wait)
        usable = row is not None and not row.disabled
        good = checks.runner.run(
            verify_password, row.password_hash if usable else dummy_hash(), password
        )
    if usable and good:
        accounts.forget_login_failures(session, username, address)
        session.commit()
        return LoginResult(Operator(row.id, row.username, row.role, row.session_generation))
    accounts.record_login_failure(session, username, address)
    session.commit()
    return LoginResult(None, WRONG)


def queue_lane(known_device: bool, wait: accounts.LoginWait) -> int:
    if known_device:
        return KNOWN_DEVICE
    return FAILED_ADDRESS if wait.address_failed else CLEAN_ADDRESS


def throttled(wait: accounts.LoginWait) -> LoginResult:
    """The 429 answer while failed logins slow this one down."""
    seconds = math.ceil(wait.seconds)
    message = ACCOUNT_SLOW_DOWN if wait.account_wide else SLOW_DOWN
    return LoginResult(None, message.format(seconds), retry_after=seconds, slowed_down=True)


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
