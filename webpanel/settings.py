"""The panel's configuration, from the environment (see .env.example)."""

from __future__ import annotations

import logging
import os
import secrets
from datetime import timedelta
from pathlib import Path

from crawler.db.engine import pooled_connect_args

log = logging.getLogger(__name__)

FALSE = {"0", "false", "no", "off"}


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() not in FALSE


def env_number(name: str, default: float, minimum: float = 0) -> float:
    """A number from the environment; a bad value stops the panel with one line naming it."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is None or number < minimum:
        raise RuntimeError(f"{name}={value!r}: expected a number >= {minimum:g}")
    return number


def defaults() -> dict:
    """Settings before create_app()'s overrides; SECRET_KEY and the URL may be None."""
    secure = env_flag("SESSION_COOKIE_SECURE", True)
    return {
        "SECRET_KEY": os.environ.get("SECRET_KEY") or None,
        "SQLALCHEMY_DATABASE_URI": None,  # create_app(): DATABASE_URL, checked, or embedded
        "SQLALCHEMY_ENGINE_OPTIONS": {
            "pool_pre_ping": True,
            "pool_size": 5,
            "connect_args": pooled_connect_args(),  # DATABASE_POOLED=1 behind PgBouncer
        },
        "SESSION_COOKIE_NAME": "hostcrawl_session",
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": secure,
        "REMEMBER_COOKIE_HTTPONLY": True,
        "REMEMBER_COOKIE_SAMESITE": "Lax",
        "REMEMBER_COOKIE_SECURE": secure,
        # Idle expiry: the cookie is re-signed on each request and refused this long
        # after the last one. Logout, a password change or disabling the account ends
        # every session of that operator at once (the session generation, webpanel.auth).
        "PERMANENT_SESSION_LIFETIME": timedelta(
            hours=env_number("PANEL_SESSION_HOURS", 12, minimum=0.01)
        ),
        # How many proxies in front of the panel set X-Forwarded-For/-Proto/-Host (0: none,
        # and the client address is the TCP peer's, which no header can change).
        "TRUSTED_PROXIES": int(env_number("PANEL_TRUSTED_PROXIES", 0)),
        "MAX_CONTENT_LENGTH": 5 * 1024 * 1024,
        # Failed logins slow down, never lock: per (account, client address) after
        # LOGIN_FREE_FAILURES, per client address after LOGIN_ADDRESS_FREE_FAILURES, each
        # further failure doubles the wait from LOGIN_DELAY_SECONDS up to LOGIN_DELAY_MAX_SECONDS.
        "LOGIN_FREE_FAILURES": 5,
        "LOGIN_ADDRESS_FREE_FAILURES": 50,
        "LOGIN_DELAY_SECONDS": 2,
        "LOGIN_DELAY_MAX_SECONDS": 900,
        # Argon2 checks at once per process (each is ~64 MiB and most of a core); a
        # login beyond them gets 429 + Retry-After at once instead of queueing.
        "LOGIN_HASH_SLOTS": int(env_number("PANEL_LOGIN_HASH_SLOTS", 1, minimum=1)),
        # The dashboard strip scans the hosts table: each worker recomputes it in the
        # background at most this often (seconds); 0 computes it on every request.
        "STATS_TTL": float(os.environ.get("PANEL_STATS_TTL", "30")),
        "PAGE_SIZE": 50,
    }


def secret_key(var: Path) -> str:
    """The session-signing key kept in var/secret_key, made on first use (mode 0600).

    Several gunicorn workers may start at once: the key is written to a private
    temporary file and linked into place, so exactly one key wins.
    """
    path = var / "secret_key"
    if not path.exists():
        tmp = var / f".secret_key.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(48))
        try:
            os.link(tmp, path)
            log.warning("SECRET_KEY is not set: made one in %s", path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    key = path.read_text().strip()
    if len(key) < 32:
        raise RuntimeError(f"{path}: secret key too short; delete it or set SECRET_KEY")
    return key
