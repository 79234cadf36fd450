"""Operator passwords: Argon2id hashes (argon2-cffi's RFC 9106 low-memory profile).

Each check costs about 64 MiB and most of a core on purpose; the panel bounds
how many run at once and queues the rest fairly (webpanel.login_queue).
"""

from __future__ import annotations

import re
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_PASSWORD = 10
MAX_PASSWORD = 1024
ROLES = ("admin", "viewer")
_USERNAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_hasher = PasswordHasher()


def check_new_user(username: str, password: str) -> None:
    """Refuse a bad username or a short password with a ValueError naming it."""
    if not _USERNAME.fullmatch(username):
        raise ValueError(f"{username!r}: username must be 1-64 of letters, digits, _ . @ -")
    check_password(username, password)


def check_password(username: str, password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise ValueError(f"password for {username!r}: at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise ValueError(f"password for {username!r}: at most {MAX_PASSWORD} characters")


def check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"{role!r}: a role is one of {', '.join(ROLES)}")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


@cache
def dummy_hash() -> str:
    """A hash to check when there is no account to check against (unknown or disabled
    names), so that such a login costs what any other does."""
    return hash_password("no such operator: this hash only burns time")
