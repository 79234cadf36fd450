"""Operator passwords: Argon2id hashes (argon2-cffi's RFC 9106 low-memory profile)."""

from __future__ import annotations

import re

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_PASSWORD = 10
_USERNAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_hasher = PasswordHasher()


def check_new_user(username: str, password: str) -> None:
    """Refuse a bad username or a short password with a ValueError naming it."""
    if not _USERNAME.fullmatch(username):
        raise ValueError(f"{username!r}: username must be 1-64 of letters, digits, _ . @ -")
    if len(password) < MIN_PASSWORD:
        raise ValueError(f"password for {username!r}: at least {MIN_PASSWORD} characters")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False
