"""The panel's configuration, from the environment (see .env.example)."""

from __future__ import annotations

import logging
import os
import secrets
from datetime import timedelta
from pathlib import Path

from crawler.core import config
from crawler.db.server.engine import pooled_connect_args

log = logging.getLogger(__name__)


def panel_values() -> dict:
    """The settings a panel reads (crawler/core/config.py), from this process's environment.

    The crawl-wide ones (ROOT_BUDGET, TRAP_WINDOW…) come from the same table and the
    same environment as the workers', so the panel shows what the crawl does.
    """
    return {
        declared.name: value
        for declared, value, _source in config.effective(os.environ)
        if config.PANEL in declared.readers
    }


def defaults() -> dict:
    """Settings before create_app()'s overrides; SECRET_KEY and the URL may be None."""
    values = panel_values()
    secure = values["SESSION_COOKIE_SECURE"]
    return {
        **values,
        "SECRET_KEY": values["SECRET_KEY"] or None,
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
        "PERMANENT_SESSION_LIFETIME": timedelta(hours=values["PANEL_SESSION_HOURS"]),
        # The client address is the TCP peer's unless this many proxies are trusted.
        "TRUSTED_PROXIES": values["PANEL_TRUSTED_PROXIES"],
        "MAX_CONTENT_LENGTH": 5 * 1024 * 1024,
        # Failed logins slow down, never lock: per (account, client address) after
        # LOGIN_FREE_FAILURES, per client address after LOGIN_ADDRESS_FREE_FAILURES, per
        # account after LOGIN_ACCOUNT_FREE_FAILURES from every address (for every browser
        # but a known device of that account's, webpanel.devices); each further failure
        # doubles the wait from LOGIN_DELAY_SECONDS up to LOGIN_DELAY_MAX_SECONDS.
        "LOGIN_FREE_FAILURES": 5,
        "LOGIN_ADDRESS_FREE_FAILURES": 50,
        "LOGIN_ACCOUNT_FREE_FAILURES": 20,
        "LOGIN_DELAY_SECONDS": 2,
        "LOGIN_DELAY_MAX_SECONDS": 900,
        # A login refused for failed logins is answered this long after it came (its
        # Retry-After if sooner): guesses that loop on the refusal come at that pace.
        "LOGIN_SLOWED_ANSWER_SECONDS": 2,
        # Argon2 checks at once per process (each is ~64 MiB and most of a core); the
        # logins beyond them queue, fairly per client address (webpanel.login_queue).
        "LOGIN_HASH_SLOTS": values["PANEL_LOGIN_HASH_SLOTS"],
        # The dashboard strip scans the hosts table: each worker recomputes it in the
        # background at most this often (seconds); 0 computes it on every request.
        "STATS_TTL": values["PANEL_STATS_TTL"],
        "PAGE_SIZE": 50,
        # The dashboard's health row fetches itself again this often (seconds; 0: never).
        "HEALTH_REFRESH_SECONDS": 10,
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
