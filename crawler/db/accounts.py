"""Panel operators: users, passwords and API tokens.

Only hashes are stored: Argon2id for passwords, SHA-256 for API tokens.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import Engine, select, text

from crawler.db.models import User
from crawler.passwords import check_new_user, hash_password


def api_token_hash(token: str) -> str:
    """How an API token is stored: tokens are 256 random bits, so one SHA-256 suffices
    (and lets the lookup be an equality on the stored hash)."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def create_user(engine: Engine, username: str, password: str) -> None:
    """Create a panel operator; the password is stored as an Argon2id hash."""
    check_new_user(username, password)
    with engine.begin() as conn:
        taken = conn.execute(text("SELECT 1 FROM users WHERE username = :u"), {"u": username})
        if taken.first():
            raise ValueError(f"{username!r}: user already exists")
        conn.execute(
            text("INSERT INTO users (username, password_hash) VALUES (:u, :p)"),
            {"u": username, "p": hash_password(password)},
        )


def new_api_token(engine: Engine, username: str) -> str:
    """A fresh API token for an operator; the previous one stops working."""
    token = secrets.token_urlsafe(32)
    with engine.begin() as conn:
        found = conn.execute(
            text("UPDATE users SET api_token_hash = :h WHERE username = :u"),
            {"h": api_token_hash(token), "u": username},
        ).rowcount
    if not found:
        raise ValueError(f"{username!r}: no such user")
    return token


def user_by_id(conn, user_id: int):
    """(id, username) of an operator, or None."""
    return conn.execute(select(User.id, User.username).where(User.id == user_id)).first()


def user_by_token(conn, token: str):
    """The users row whose API token this is, or None."""
    if not token:
        return None
    return conn.execute(
        select(User.id, User.username).where(User.api_token_hash == api_token_hash(token))
    ).first()
