"""Fixtures and helpers for the panel's tests (imported by test_panel*.py; no tests here).

Argon2 is slow on purpose, so the operators' hash is made once per session and
written straight into the users table after each truncation; most tests log
in by writing the Flask-Login session instead of posting the form.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable

import pytest
from sqlalchemy import text

from crawler.core.passwords import hash_password
from webpanel import accounts as panel_accounts
from webpanel import create_app
from webpanel.security import LOGGED_IN_AT

PASSWORD = "correct horse battery staple"
SECRET = "test-secret-key-" * 4
CSRF = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


def panel_config(url: str, **extra) -> dict:
    return {
        "SQLALCHEMY_DATABASE_URI": url,
        "SECRET_KEY": SECRET,
        "STATS_TTL": 0,
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_size": 2},
        # Tests make hundreds of refused logins: answered at once (the hold's own tests
        # set it).
        "LOGIN_SLOWED_ANSWER_SECONDS": 0,
        **extra,
    }


@pytest.fixture(scope="session")
def password_hash() -> str:
    return hash_password(PASSWORD)


@pytest.fixture(scope="session")
def app(database_url):
    return create_app(panel_config(database_url))


@pytest.fixture
def operators(db, password_hash) -> dict[str, int]:
    """Two operators, alice and bob, on an empty database: {name: id}."""
    ids = {}
    with db.begin() as conn:
        conn.execute(text("DELETE FROM login_failures"))  # keyed by name: not truncated
        for name in ("alice", "bob"):
            ids[name] = conn.execute(
                text("INSERT INTO users (username, password_hash) VALUES (:u, :p) RETURNING id"),
                {"u": name, "p": password_hash},
            ).scalar_one()
    return ids


@pytest.fixture
def client(app, operators):
    """A test client with alice logged in."""
    client = app.test_client()
    with client.session_transaction() as session:
        session["_user_id"] = f"{operators['alice']}.1"  # id.session generation
        session["_fresh"] = True
        session[LOGGED_IN_AT] = int(time.time())
    return client


@pytest.fixture
def anonymous(app, db):
    return app.test_client()


def csrf_token(client, url: str = "/no_follow") -> str:
    """The CSRF token of this client's session, from a page with a form."""
    page = client.get(url)
    found = CSRF.search(page.get_data(as_text=True))
    assert found, f"no CSRF token on {url} ({page.status_code})"
    return found.group(1)


def post_form(client, url: str, data: dict, page: str | None = None, **kwargs):
    return client.post(url, data={**data, "csrf_token": csrf_token(client, page or url)}, **kwargs)


def login(client, username: str, password: str, next_url: str | None = None):
    token = csrf_token(client, "/login")
    url = "/login" + (f"?next={next_url}" if next_url is not None else "")
    data = {"username": username, "password": password, "csrf_token": token}
    return client.post(url, data=data)


def insert_hosts(engine, names: Iterable[str], **columns) -> None:
    """Hosts and queue rows as the crawl saves them (due now), with optional crawl facts
    written straight in SQL (the roots' counters moved as a finish moves them)."""
    from crawler.core.links import FoundName
    from crawler.db.crawl import queue, rollups

    names = sorted(set(names))
    with engine.begin() as conn:
        queue.insert_hosts(conn, [(None, [FoundName.of(name) for name in names])])
        if columns:
            sets = ", ".join(f"{k} = :{k}" for k in columns)
            written = conn.execute(
                text(
                    f"UPDATE hosts SET {sets} WHERE hostname = ANY(CAST(:n AS text[]))"
                    " RETURNING root, hostname, outcome"
                ),
                {"n": names, **columns},
            ).all()
            rollups.count_hosts(conn, crawled=[(r, None, outcome) for r, _, outcome in written])
            if "last_crawled_at" in columns:
                rollups.count_hours(conn, crawled=[(h, outcome) for _, h, outcome in written])


def shown_hosts(html: str) -> list[str]:
    """The hostnames of the host list on a rendered `/`."""
    return re.findall(r'<a class="host" href="[^"]+">([^<]+)</a>', html)


def next_link(html: str) -> str | None:
    found = re.search(r'<a rel="next" href="([^"]+)"', html)
    return found.group(1).replace("&amp;", "&") if found else None


def give_api_token(engine, username: str, token: str) -> dict:
    """Store `token` as the operator's API token; the headers that carry it."""
    from crawler.db.operators.accounts import api_token_hash

    with engine.begin() as conn:
        conn.execute(
            text("UPDATE users SET api_token_hash = :h WHERE username = :u"),
            {"h": api_token_hash(token), "u": username},
        )
    return {"Authorization": f"Bearer {token}"}


def entry_rows(engine, rule: str) -> dict[str, str | None]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT hostname, note FROM queue WHERE status_reason = :r"), {"r": rule}
        )
        return dict(rows.all())


def audit(engine) -> list[tuple[str, str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT actor, action, hostname FROM change_log ORDER BY id"))
        return [tuple(r) for r in rows]


def routing(engine, hostname: str):
    with engine.connect() as conn:
        return conn.execute(
            text("SELECT status_reason, denied_by, next_claim_at FROM queue WHERE hostname = :h"),
            {"h": hostname},
        ).one()


# -- logins -----------------------------------------------------------------------------


def attempt(
    app, username: str, password: str, address: str = "192.0.2.1", headers=None, browser=None
):
    """One login from `address`, as a fresh browser would make it (or `browser`, a test
    client with the cookies it kept)."""
    client = browser or app.test_client()
    environ = {"REMOTE_ADDR": address}
    page = client.get("/login", environ_base=environ).get_data(as_text=True)
    token = CSRF.search(page).group(1)
    data = {"username": username, "password": password, "csrf_token": token}
    response = client.post("/login", data=data, environ_base=environ, headers=headers or {})
    return response, client


def set_cookie(response, name: str = "hostcrawl_session") -> str:
    """The Set-Cookie header of the cookie `name` (a good login sets two: the session's
    and the device's, webpanel.devices)."""
    return next(c for c in response.headers.getlist("Set-Cookie") if c.startswith(f"{name}="))


def message(response) -> str:
    found = re.search(
        r'<ul class="errors"[^>]*>\s*<li>([^<]+)</li>', response.get_data(as_text=True)
    )
    return found.group(1) if found else ""


def fail_many(engine, username: str, address: str, failures: int) -> None:
    """`failures` failed logins just now, as an attacker's guesses leave them."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO login_failures (username, address, failures) VALUES (:u, :a, :f)"
                " ON CONFLICT (username, address) DO UPDATE SET failures = :f,"
                " last_failed_at = now()"
            ),
            {"u": username, "a": address, "f": failures},
        )


@pytest.fixture
def hash_checks(monkeypatch):
    """How many Argon2 checks the panel makes."""
    calls = []
    real = panel_accounts.verify_password

    def counting(password_hash, password):
        calls.append(password_hash)
        return real(password_hash, password)

    monkeypatch.setattr(panel_accounts, "verify_password", counting)
    return calls
