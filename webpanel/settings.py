"""The panel's configuration, from the environment (see .env.example)."""

from __future__ import annotations

import logging
import os
import secrets
from datetime import timedelta
from pathlib import Path

log = logging.getLogger(__name__)

FALSE = {"0", "false", "no", "off"}


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() not in FALSE


def defaults() -> dict:
    """Settings before create_app()'s overrides; SECRET_KEY and the URL may be None."""
    secure = env_flag("SESSION_COOKIE_SECURE", True)
    return {
        "SECRET_KEY": os.environ.get("SECRET_KEY") or None,
        "SQLALCHEMY_DATABASE_URI": os.environ.get("DATABASE_URL") or None,
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_pre_ping": True, "pool_size": 5},
        "SESSION_COOKIE_NAME": "hostcrawl_session",
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": secure,
        "REMEMBER_COOKIE_HTTPONLY": True,
        "REMEMBER_COOKIE_SAMESITE": "Lax",
        "REMEMBER_COOKIE_SECURE": secure,
        "PERMANENT_SESSION_LIFETIME": timedelta(hours=12),
        "MAX_CONTENT_LENGTH": 5 * 1024 * 1024,
        # Per account, in the database: after LOGIN_MAX_FAILURES failures in a row the
        # account is locked for LOGIN_LOCK_SECONDS, doubling with each further failure.
        "LOGIN_MAX_FAILURES": 5,
        "LOGIN_LOCK_SECONDS": 60,
        "LOGIN_LOCK_MAX_SECONDS": 3600,
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
