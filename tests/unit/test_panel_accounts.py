"""Accounts: sessions the server can end, roles, and login throttling that an
attacker cannot turn against operators; plus the idle expiry and ProxyFix."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from sqlalchemy import text
from werkzeug.routing import IntegerConverter

from crawler.core.config import SettingError
from crawler.db.operators import accounts
from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import (
    PASSWORD,
    attempt,
    fail_many,
    give_api_token,
    insert_hosts,
    message,
    panel_config,
    post_form,
)
from webpanel import accounts as panel_accounts
from webpanel import create_app
from webpanel.security import ANY_ROLE_POSTS, READ_METHODS

pytest_plugins = ["tests.unit.test_panel_support"]

SESSION_COOKIE = "hostcrawl_session"


def no_follow(engine) -> list[str]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT hostname FROM queue WHERE status_reason = 'no_follow'"))
        return sorted(r[0] for r in rows)


def age_failures(engine, seconds: float) -> None:
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE login_failures SET last_failed_at = last_failed_at - :s"),
            {"s": timedelta(seconds=seconds)},
        )


# -- row 1: a session the server ends ------------------------------------------------------


def test_logout_ends_the_session_on_the_server(app, db, operators):
    response, browser = attempt(app, "alice", PASSWORD)
    assert response.status_code == 302
    saved = browser.get_cookie(SESSION_COOKIE).value
    assert browser.get("/").status_code == 200
    post_form(browser, "/logout", {}, page="/")
    replay = app.test_client()
    replay.set_cookie(SESSION_COOKIE, saved)
    assert replay.get("/").status_code == 302  # to the login page
    with replay.session_transaction() as replayed:
        token = replayed.get("csrf_token")  # the replayed session's own CSRF secret
    data = {"entries": "evil.test", "save": "Save", "csrf_token": token or ""}
    posted = replay.post("/no_follow", data=data)
    assert posted.status_code == 302 and posted.location.startswith("/login")
    assert no_follow(db) == []


@pytest.mark.parametrize("change", ["password", "disable"])
def test_a_new_password_or_disabling_ends_every_session(app, db, operators, change):
    _, browser = attempt(app, "alice", PASSWORD)
    assert browser.get("/").status_code == 200
    if change == "password":
        accounts.set_password(db, "alice", "a brand new password")
    else:
        accounts.set_disabled(db, "alice", True)
    assert browser.get("/").status_code == 302


def test_a_disabled_operator_cannot_log_in_and_their_token_stops(app, db, operators):
    headers = give_api_token(db, "alice", "alice-token")
    assert app.test_client().get("/api/stats", headers=headers).status_code == 200
    accounts.set_disabled(db, "alice", True)
    assert app.test_client().get("/api/stats", headers=headers).status_code == 401
    response, _ = attempt(app, "alice", PASSWORD)
    assert response.status_code == 200 and message(response) == panel_accounts.WRONG
    accounts.set_disabled(db, "alice", False)
    assert attempt(app, "alice", PASSWORD)[0].status_code == 302


def signed_session(app, data: dict, age: timedelta) -> str:
    """A session cookie as the panel would have signed it `age` ago."""
    serializer = app.session_interface.get_signing_serializer(app)
    signer = serializer.make_signer()
    past = int(time.time() - age.total_seconds())
    signer.get_timestamp = lambda: past
    payload = serializer.dump_payload(data)
    return signer.sign(payload).decode()


@pytest.mark.parametrize(("idle_hours", "let_in"), [(11.9, True), (12.1, False)])
def test_a_session_expires_after_panel_session_hours_idle(
    monkeypatch, database_url, db, operators, idle_hours, let_in
):
    monkeypatch.delenv("PANEL_SESSION_HOURS", raising=False)
    app = create_app(panel_config(database_url))
    assert app.permanent_session_lifetime == timedelta(hours=12)
    _, browser = attempt(app, "alice", PASSWORD)
    with browser.session_transaction() as session:
        data = dict(session)
    old = signed_session(app, data, timedelta(hours=idle_hours))
    replay = app.test_client()
    replay.set_cookie(SESSION_COOKIE, old)
    assert (replay.get("/").status_code == 200) is let_in


def test_panel_session_hours_comes_from_the_environment(monkeypatch, database_url):
    monkeypatch.setenv("PANEL_SESSION_HOURS", "2")
    assert create_app(panel_config(database_url)).permanent_session_lifetime == timedelta(hours=2)
    monkeypatch.setenv("PANEL_SESSION_HOURS", "soon")
    with pytest.raises(SettingError, match="PANEL_SESSION_HOURS"):
        create_app(panel_config(database_url))


# -- roles ----------------------------------------------------------------------------------

ANY_CSRF = re.compile(r'name="csrf_token"(?: type="hidden")? value="([^"]+)"')
SAMPLE_ARGS = {"no_follow.remove": "gone.test", "blocked.unblock": "trap.test"}


def sample_value(rule, argument: str):
    """A value the rule's converter takes: a number for <int:...>, else a hostname."""
    if isinstance(rule._converters.get(argument), IntegerConverter):
        return 1
    return SAMPLE_ARGS.get(rule.endpoint, "example.org")


def routes() -> list[tuple[str, str, str]]:
    """Every (endpoint, url, method) of the app, from its url_map."""
    probe = create_app(panel_config("postgresql+psycopg://nobody@127.0.0.1:9/none"))
    found = []
    for rule in probe.url_map.iter_rules():
        values = {a: sample_value(rule, a) for a in rule.arguments}
        url = probe.url_map.bind("localhost").build(rule.endpoint, values)
        found += [(rule.endpoint, url, m) for m in sorted(rule.methods - {"HEAD", "OPTIONS"})]
    return found


ROUTES = routes()
CHANGES = [
    pytest.param(e, u, m, id=f"{m} {u}")
    for e, u, m in ROUTES
    if m not in READ_METHODS and e not in ANY_ROLE_POSTS
]
READS = [pytest.param(e, u, id=u) for e, u, m in ROUTES if m == "GET" and e != "static"]
# What a logged-in viewer gets where it is not the page itself (200).
NOT_A_PAGE = {
    "auth.login": 302,  # already logged in: on to the hosts
    "favicon": 301,  # to the static icon
    "api.check_host": 400,  # no ?name=
    "metrics.metrics": 401,  # for an API bearer token only, not a browser session
}


def test_the_walk_finds_every_change():
    endpoints = {p.values[0] for p in CHANGES}
    assert {
        "no_follow.add",
        "no_follow.remove",
        "no_follow.import_csv",
        "blocked.unblock",
        "api.no_follow_add",
        "api.no_follow_remove",
        "api.blocked_unblock",
    } <= endpoints


@pytest.fixture
def viewer(app, db, operators, password_hash):
    """A test client logged in as val, a viewer, and val's API token headers."""
    with db.begin() as conn:
        conn.execute(
            text("INSERT INTO users (username, password_hash, role) VALUES ('val', :p, 'viewer')"),
            {"p": password_hash},
        )
    response, browser = attempt(app, "val", PASSWORD)
    assert response.status_code == 302
    return browser, give_api_token(db, "val", "val-token")


def state(engine) -> tuple:
    with engine.connect() as conn:
        queue = conn.execute(text("SELECT hostname, status_reason FROM queue ORDER BY 1")).all()
        audit = conn.execute(text("SELECT count(*) FROM change_log")).scalar()
    return queue, audit


@pytest.mark.parametrize(("endpoint", "url", "method"), CHANGES)
def test_a_viewer_can_change_nothing(app, db, viewer, endpoint, url, method):
    browser, headers = viewer
    deny_entries.add_no_follow(db, ["gone.test"])
    deny_entries.upsert_blocked(db, "trap.test", "a trap")
    before = state(db)
    if endpoint.startswith("api."):
        names = {"names": ["new.test", "gone.test", "trap.test"]}
        response = app.test_client().open(url, method=method, json=names, headers=headers)
        assert response.status_code == 403 and response.is_json
        assert "viewer" in response.json["error"]
    else:
        token = ANY_CSRF.search(browser.get("/").get_data(as_text=True)).group(1)
        data = {"entries": "new.test", "save": "Save", "submit": "Confirm", "csrf_token": token}
        response = browser.open(url, method=method, data=data)
        assert response.status_code == 403, response.data[:300]
        assert "viewer" in response.get_data(as_text=True)
    assert state(db) == before


@pytest.mark.parametrize(("endpoint", "url"), READS)
def test_a_viewer_reads_everything(app, db, viewer, endpoint, url):
    browser, headers = viewer
    insert_hosts(db, ["example.org"])
    deny_entries.add_no_follow(db, ["gone.test"])
    deny_entries.upsert_blocked(db, "trap.test", "a trap")
    if endpoint.startswith("api."):
        response = app.test_client().get(url, headers=headers)
    else:
        response = browser.get(url)
    assert response.status_code == NOT_A_PAGE.get(endpoint, 200), url


def test_a_viewer_is_not_offered_what_they_cannot_do(app, db, viewer, client):
    browser, _ = viewer
    deny_entries.add_no_follow(db, ["gone.test"])
    deny_entries.upsert_blocked(db, "trap.test", "a trap")
    for page, action in [
        ("/no_follow", "Remove…"),
        ("/no_follow", "Preview"),
        ("/blocked", "Unblock…"),
    ]:
        assert action not in browser.get(page).get_data(as_text=True)
        assert action in client.get(page).get_data(as_text=True)  # alice, an admin


# -- rows 2 and 4: throttling nobody can turn against operators ------------------------------


def test_delays_grow_and_are_capped():
    policy = accounts.LoginPolicy(free_failures=5, delay=2, max_delay=900)
    waits = [policy.wait_after(n, 5).total_seconds() for n in (0, 4, 5, 6, 7, 30)]
    assert waits == [0, 0, 2, 4, 8, 900]


def test_failures_slow_down_the_guesser_but_never_lock_the_account(app, db, operators):
    for _ in range(5):
        response, _ = attempt(app, "alice", "wrong password!", "198.51.100.7")
        assert response.status_code == 200 and message(response) == panel_accounts.WRONG
    slowed, _ = attempt(app, "alice", PASSWORD, "198.51.100.7")
    assert slowed.status_code == 429 and slowed.headers["Retry-After"] == "2"
    age_failures(db, 2)  # the wait is over: the right password works, nothing is locked
    assert attempt(app, "alice", PASSWORD, "198.51.100.7")[0].status_code == 302


def test_an_office_behind_one_address_still_gets_in(app, db, operators):
    fail_many(db, "alice", "203.0.113.5", 10)  # someone at the office got alice wrong 10 times
    fail_many(db, accounts.ANY_ACCOUNT, "203.0.113.5", 10)
    assert attempt(app, "bob", PASSWORD, "203.0.113.5")[0].status_code == 302


def test_an_operator_gets_in_while_another_address_hammers_their_account(app, db, operators):
    fail_many(db, "alice", "198.51.100.66", 10_000)
    fail_many(db, accounts.ANY_ACCOUNT, "198.51.100.66", 10_000)
    refused, _ = attempt(app, "alice", PASSWORD, "198.51.100.66")
    assert refused.status_code == 429
    assert attempt(app, "alice", PASSWORD, "192.0.2.10")[0].status_code == 302


def test_one_address_failing_on_many_accounts_is_slowed_at_a_higher_threshold(app, db, operators):
    fail_many(db, accounts.ANY_ACCOUNT, "198.51.100.9", 49)
    assert attempt(app, "bob", "wrong password!", "198.51.100.9")[0].status_code == 200
    assert attempt(app, "bob", PASSWORD, "198.51.100.9")[0].status_code == 429  # the 50th
    assert attempt(app, "bob", PASSWORD, "192.0.2.11")[0].status_code == 302


def test_unlock_forgets_the_failures(app, db, operators):
    fail_many(db, "alice", "198.51.100.7", 20)
    assert attempt(app, "alice", PASSWORD, "198.51.100.7")[0].status_code == 429
    assert accounts.unlock(db, "alice") == 1
    assert attempt(app, "alice", PASSWORD, "198.51.100.7")[0].status_code == 302


def test_unknown_known_and_disabled_names_cost_and_read_the_same(app, db, operators, hash_checks):
    accounts.set_disabled(db, "bob", True)
    answers = {}
    for name, password in [("alice", "wrong password!"), ("nobody", PASSWORD), ("bob", PASSWORD)]:
        hash_checks.clear()
        response, _ = attempt(app, name, password, "192.0.2.50")
        answers[name] = (response.status_code, message(response), len(hash_checks))
    assert set(answers.values()) == {(200, panel_accounts.WRONG, 1)}, answers
    # Slowed down: the same answer, and no check at all, for a known and an unknown name.
    for name in ("alice", "nobody"):
        fail_many(db, name, "192.0.2.51", 9)
    slowed = {}
    for name in ("alice", "nobody"):
        hash_checks.clear()
        response, _ = attempt(app, name, PASSWORD, "192.0.2.51")
        slowed[name] = (response.status_code, message(response), len(hash_checks))
    assert slowed["alice"] == slowed["nobody"] and slowed["alice"][0] == 429
    assert slowed["alice"][2] == 0


# -- ProxyFix ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("proxies", "counted_for"), [(0, "127.0.0.1"), (1, "198.51.100.99")])
def test_the_client_address_comes_from_x_forwarded_for_only_behind_trusted_proxies(
    database_url, db, operators, proxies, counted_for
):
    app = create_app(panel_config(database_url, TRUSTED_PROXIES=proxies))
    forwarded = {"X-Forwarded-For": "198.51.100.99"}
    attempt(app, "alice", "wrong password!", "127.0.0.1", headers=forwarded)
    with db.connect() as conn:
        addresses = conn.execute(
            text("SELECT DISTINCT address FROM login_failures WHERE address <> '*'")
        ).scalars()
        assert list(addresses) == [counted_for]
