"""Panel operators: users, roles, passwords, API tokens, sessions and failed logins.

Only hashes are stored: Argon2id for passwords, SHA-256 for API tokens. Every
function takes an engine (it opens its own transaction) or a connection/session
(the caller's), as its first argument says.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, and_, case, delete, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert

from crawler.core.passwords import check_new_user, check_password, check_role, hash_password
from crawler.db.models import LoginFailure, User

ADMIN, VIEWER = "admin", "viewer"
ANY_ACCOUNT = ""  # login_failures.username of the per-address count
ANY_ADDRESS = "*"  # login_failures.address of the per-account count (every address)
FORGET_AFTER = timedelta(days=1)  # failed logins older than this no longer count


def api_token_hash(token: str) -> str:
    """How an API token is stored: tokens are 256 random bits, so one SHA-256 suffices
    (and lets the lookup be an equality on the stored hash)."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def create_user(engine: Engine, username: str, password: str, role: str = ADMIN) -> None:
    """Create a panel operator; the password is stored as an Argon2id hash."""
    check_new_user(username, password)
    check_role(role)
    with engine.begin() as conn:
        taken = conn.execute(text("SELECT 1 FROM users WHERE username = :u"), {"u": username})
        if taken.first():
            raise ValueError(f"{username!r}: user already exists")
        conn.execute(
            text("INSERT INTO users (username, password_hash, role) VALUES (:u, :p, :r)"),
            {"u": username, "p": hash_password(password), "r": role},
        )


def new_api_token(engine: Engine, username: str) -> str:
    """A fresh API token for an operator; the previous one stops working."""
    token = secrets.token_urlsafe(32)
    _change(engine, username, api_token_hash=api_token_hash(token))
    return token


def revoke_api_token(engine: Engine, username: str) -> None:
    """`hostcrawl user token --revoke`: the operator's API token stops working for good."""
    _change(engine, username, api_token_hash=None)


def user_by_id(conn, user_id: int):
    """(id, username, role, session_generation) of an enabled operator, or None."""
    return conn.execute(
        select(User.id, User.username, User.role, User.session_generation).where(
            User.id == user_id, User.disabled_at.is_(None)
        )
    ).first()


def user_by_token(conn, token: str):
    """(id, username, role) of the enabled operator whose API token this is, or None."""
    if not token:
        return None
    return conn.execute(
        select(User.id, User.username, User.role).where(
            User.api_token_hash == api_token_hash(token), User.disabled_at.is_(None)
        )
    ).first()


def user_for_login(conn, username: str):
    """(id, username, role, session_generation, password_hash, disabled) by name, or None."""
    return conn.execute(
        select(
            User.id,
            User.username,
            User.role,
            User.session_generation,
            User.password_hash,
            User.disabled_at.is_not(None).label("disabled"),
        ).where(User.username == username)
    ).first()


# -- what operators (the CLI) change -------------------------------------------------------


def list_users(engine: Engine) -> list:
    """Every operator: username, role, created_at, disabled_at, has a token, failed logins."""
    failures = (
        select(func.coalesce(func.sum(LoginFailure.failures), 0))
        .where(LoginFailure.username == User.username, LoginFailure.address != ANY_ADDRESS)
        .where(LoginFailure.last_failed_at > func.now() - FORGET_AFTER)
        .scalar_subquery()
    )
    with engine.connect() as conn:
        return conn.execute(
            select(
                User.username,
                User.role,
                User.created_at,
                User.disabled_at,
                User.api_token_hash.is_not(None).label("has_token"),
                failures.label("failed_logins"),
            ).order_by(User.username)
        ).all()


def set_disabled(engine: Engine, username: str, disabled: bool) -> None:
    """Disable (every session ends and the API token is revoked: enabling the operator
    again brings neither back) or enable an operator."""
    if disabled:
        _change(engine, username, disabled_at=func.now(), api_token_hash=None, end_sessions=True)
    else:
        _change(engine, username, disabled_at=None)


def set_password(engine: Engine, username: str, password: str) -> None:
    """A new password; every session of the operator ends and their API token is revoked
    (whoever had the old password may have made one)."""
    check_password(username, password)
    new_hash = hash_password(password)
    _change(engine, username, password_hash=new_hash, api_token_hash=None, end_sessions=True)


def set_role(engine: Engine, username: str, role: str) -> None:
    check_role(role)
    _change(engine, username, role=role, end_sessions=True)


def delete_user(engine: Engine, username: str) -> None:
    with engine.begin() as conn:
        if not conn.execute(delete(User).where(User.username == username)).rowcount:
            raise ValueError(f"{username!r}: no such user")
        conn.execute(delete(LoginFailure).where(LoginFailure.username == username))


def end_sessions(conn, user_id: int) -> None:
    """Every session of this operator stops working (logout)."""
    conn.execute(
        update(User)
        .where(User.id == user_id)
        .values(session_generation=User.session_generation + 1)
    )


def _change(engine: Engine, username: str, end_sessions: bool = False, **values) -> None:
    if end_sessions:
        values["session_generation"] = User.session_generation + 1
    with engine.begin() as conn:
        found = conn.execute(
            update(User).where(User.username == username).values(**values)
        ).rowcount
    if not found:
        raise ValueError(f"{username!r}: no such user")


# -- failed logins ------------------------------------------------------------------------


@dataclass(frozen=True)
class LoginPolicy:
    """Failed logins slow down, never lock. Per (account, address) the first
    `free_failures` cost nothing, then each one doubles the wait from `delay` up to
    `max_delay`; per address alone the same from `address_free_failures` on; per
    account, over every address, from `account_free_failures` on, for every login
    but one from a known device (a browser that has logged in to that account
    before): guesses from addresses that never failed are slowed too, and the
    operator's own browser never is."""

    free_failures: int = 5
    address_free_failures: int = 50
    account_free_failures: int = 20
    delay: float = 2.0
    max_delay: float = 900.0

    def wait_after(self, failures: int, free: int) -> timedelta:
        if failures < free:
            return timedelta(0)
        doublings = min(failures - free, 30)
        return timedelta(seconds=min(self.delay * 2**doublings, self.max_delay))


@dataclass(frozen=True)
class LoginWait:
    """What failed logins say about the next one."""

    seconds: float  # before it may be tried (0: now)
    address_failed: bool  # the address has failed logins of the last day (any account)
    account_wide: bool = False  # the wait is the account's, from guesses made elsewhere


def login_wait(
    conn, username: str, address: str, policy: LoginPolicy, known_device: bool = False
) -> LoginWait:
    """How long a login for `username` from `address` must wait, and whether the address
    has failed before. The same for a known and an unknown username: only failures count.
    `known_device`: the browser has logged in to this account before, so the account's
    own count (guesses from everywhere) does not slow it.
    """
    rows = conn.execute(
        select(
            LoginFailure.username,
            LoginFailure.address,
            LoginFailure.failures,
            LoginFailure.last_failed_at,
            func.now().label("now"),
        ).where(
            or_(
                and_(
                    LoginFailure.address == address,
                    LoginFailure.username.in_([username, ANY_ACCOUNT]),
                ),
                and_(LoginFailure.address == ANY_ADDRESS, LoginFailure.username == username),
            ),
            LoginFailure.last_failed_at > func.now() - FORGET_AFTER,
        )
    ).all()
    waits = {False: 0.0, True: 0.0}  # by whether the row is the account's, over every address
    for row in rows:
        account_wide = row.address == ANY_ADDRESS
        if account_wide and known_device:
            continue
        until: datetime = row.last_failed_at + policy.wait_after(row.failures, _free(row, policy))
        waits[account_wide] = max(waits[account_wide], (until - row.now).total_seconds())
    seconds = max(waits.values())
    return LoginWait(
        seconds,
        any(r.address == address for r in rows),
        account_wide=seconds > 0 and waits[True] > waits[False],
    )


def _free(row, policy: LoginPolicy) -> int:
    """The failures a row's count allows before its waits begin."""
    if row.username == ANY_ACCOUNT:
        return policy.address_free_failures
    if row.address == ANY_ADDRESS:
        return policy.account_free_failures
    return policy.free_failures


def record_login_failure(conn, username: str, address: str) -> None:
    """Count one failed login for (username, address), for the address alone and for
    the account alone."""
    stale = LoginFailure.last_failed_at < func.now() - FORGET_AFTER
    for name, at in ((username, address), (ANY_ACCOUNT, address), (username, ANY_ADDRESS)):
        add = insert(LoginFailure).values(username=name, address=at, failures=1)
        conn.execute(
            add.on_conflict_do_update(
                index_elements=["username", "address"],
                set_={
                    "failures": case((stale, 1), else_=LoginFailure.failures + 1),
                    "last_failed_at": func.now(),
                },
            )
        )
    conn.execute(delete(LoginFailure).where(stale))


def forget_login_failures(conn, username: str, address: str | None = None) -> int:
    """After a good login (one address) or `hostcrawl user unlock` (every address)."""
    query = delete(LoginFailure).where(LoginFailure.username == username)
    if address is not None:
        query = query.where(LoginFailure.address == address)
    return conn.execute(query).rowcount


def unlock(engine: Engine, username: str) -> int:
    """`hostcrawl user unlock`: forget the operator's failed logins from every address."""
    with engine.begin() as conn:
        if conn.execute(select(User.id).where(User.username == username)).first() is None:
            raise ValueError(f"{username!r}: no such user")
        return forget_login_failures(conn, username)
