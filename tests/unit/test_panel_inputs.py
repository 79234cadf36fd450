"""The last holes an outsider found: lone surrogates and NULs, tokens that outlived their
owner's password, a CSV export that could be cached, notes of any length, the
database's own words, sessions kept alive for ever."""

from __future__ import annotations

import io
import time

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from crawler.cli import main as cli_main
from crawler.core.inputs import MAX_NOTE
from crawler.db.operators import accounts
from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import (
    PASSWORD,
    attempt,
    give_api_token,
    panel_config,
    post_form,
)
from webpanel import create_app
from webpanel.queries import paging
from webpanel.security import LOGGED_IN_AT, PUBLIC_ENDPOINTS

pytest_plugins = ["tests.unit.test_panel_support"]

SURROGATE = "\ud800"


@pytest.fixture
def api(app, db, operators):
    """A test client and the headers of alice's API token."""
    return app.test_client(), give_api_token(db, "alice", "alice-token")


def error_of(response) -> str:
    return response.json["error"] if response.is_json else response.get_data(as_text=True)


# -- lone surrogates and NULs ---------------------------------------------------------------

LISTS = ["/?sort=name&", "/no_follow?", "/blocked?", "/roots?sort=name&"]
API_LISTS = ["/api/hosts?sort=name&", "/api/no_follow?", "/api/blocked?", "/api/roots?sort=name&"]


@pytest.mark.parametrize("page", LISTS + API_LISTS)
@pytest.mark.parametrize("bad", [SURROGATE, "a\x00b"], ids=["surrogate", "nul"])
def test_a_cursor_holding_what_no_query_can_take_is_a_400(client, api, page, bad):
    cursor = paging.encode_cursor([f"example{bad}.org"])
    browser = api[0] if page.startswith("/api/") else client
    response = browser.get(f"{page}after={cursor}", headers=api[1])
    assert response.status_code == 400
    assert "bad page cursor" in error_of(response)


def test_a_cursor_with_a_number_past_bigint_is_a_400(client):
    response = client.get(f"/audit?after={paging.encode_cursor([10**30])}")
    assert response.status_code == 400 and "bad page cursor" in error_of(response)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"names": ["a.test"], "note": f"why{SURROGATE}"}, "lone surrogate"),
        ({"names": [f"a{SURROGATE}.test"]}, "lone surrogate"),
        ({"names": ["a.test"], "note": "why\x00"}, "NUL"),
        ({"names": ["a\x00.test"]}, "NUL"),
        ({"names": ["a.test"], f"key{SURROGATE}": 1}, "lone surrogate"),
    ],
)
@pytest.mark.parametrize("url", ["/api/no_follow/add", "/api/no_follow/remove"])
def test_the_api_refuses_surrogates_and_nuls_anywhere_in_the_json(api, db, url, body, says):
    client, headers = api
    response = client.post(url, json=body, headers=headers)
    assert response.status_code == 400 and response.is_json
    assert says in response.json["error"]
    assert deny_entries.deny_entries(db) == []


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/no_follow?q=a%00b", "q"),
        ("/?q=a%00b", "q"),
        ("/api/check_host?name=a%00b", "name"),
        ("/no_follow/a%00b.test/remove", "hostname"),
    ],
)
def test_a_nul_in_the_url_is_a_400_naming_the_field(client, api, url, field):
    response = client.get(url, headers=api[1])
    assert response.status_code == 400
    assert f"{field}: contains a NUL character" in error_of(response)


@pytest.mark.parametrize("field", ["entries", "note"])
def test_a_nul_in_a_form_is_a_400_naming_the_field(client, db, field):
    data = {"entries": "a.test", "note": "why", "save": "Save", field: "x\x00y"}
    response = post_form(client, "/no_follow", data)
    assert response.status_code == 400
    assert f"{field}: contains a NUL character" in response.get_data(as_text=True)
    assert deny_entries.deny_entries(db) == []


def test_a_csv_with_a_nul_is_a_400_and_stores_nothing(client, db):
    form = {"file": (io.BytesIO(b"hostname,note\nok.test,fi\x00ne\n"), "x.csv"), "preview": "1"}
    response = post_form(client, "/no_follow/import", form, content_type="multipart/form-data")
    assert response.status_code == 400 and "NUL" in response.get_data(as_text=True)
    assert deny_entries.deny_entries(db) == []


# -- one note limit on every path ---------------------------------------------------------

LONG_NOTE = "n" * (MAX_NOTE + 1)


def test_a_note_one_past_the_limit_is_refused_by_the_form(client, db):
    ok = post_form(client, "/no_follow", {"entries": "a.test", "note": "n" * MAX_NOTE, "save": 1})
    assert ok.status_code == 200
    response = post_form(client, "/no_follow", {"entries": "b.test", "note": LONG_NOTE, "save": 1})
    assert response.status_code == 400 and f"longer than {MAX_NOTE}" in response.get_data(
        as_text=True
    )
    assert [e[0] for e in deny_entries.deny_entries(db)] == ["a.test"]


@pytest.mark.parametrize("where", ["upload", "hidden copy"])
def test_a_note_past_the_limit_is_refused_by_the_csv_import(client, db, where):
    data = f"hostname,note\nok.test,fine\nbig.test,{LONG_NOTE}\n"
    if where == "upload":
        form = {"file": (io.BytesIO(data.encode()), "big.csv"), "preview": "Preview"}
        response = post_form(client, "/no_follow/import", form, content_type="multipart/form-data")
    else:
        response = post_form(client, "/no_follow/import", {"csv_text": data, "save": "Import"})
    assert response.status_code == 400
    assert f"row 3: the note: at most {MAX_NOTE} characters" in response.get_data(as_text=True)
    assert deny_entries.deny_entries(db) == []


def test_a_note_past_the_limit_is_refused_by_the_api(api, db):
    client, headers = api
    body = {"names": ["a.test"], "note": LONG_NOTE}
    response = client.post("/api/no_follow/add", json=body, headers=headers)
    assert response.status_code == 400 and f"at most {MAX_NOTE}" in response.json["error"]
    assert deny_entries.deny_entries(db) == []


def test_a_note_past_the_limit_is_refused_by_the_cli(db):
    run = CliRunner().invoke(cli_main, ["no-follow", "add", "a.test", "--note", LONG_NOTE])
    assert run.exit_code == 1 and f"--note: at most {MAX_NOTE} characters" in run.output
    assert deny_entries.deny_entries(db) == []


# -- the database's words stay in the log ------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "ours", "theirs"),
    [
        ("SELECT CAST(2147483648 AS integer)", "a number out of range", "integer out of range"),
        ("SELECT CAST('tomorrow-ish' AS timestamptz)", "not a date and time", "invalid input"),
        ("SELECT CAST('x' AS integer)", "a value of the wrong kind", "invalid input"),
    ],
)
@pytest.mark.parametrize("prefix", ["/api", ""])
def test_database_refusals_are_told_in_our_words(
    monkeypatch, database_url, sql, ours, theirs, prefix
):
    from webpanel.extensions import db as flask_db

    monkeypatch.setattr("webpanel.security.PUBLIC_ENDPOINTS", PUBLIC_ENDPOINTS | {"probe"})
    app = create_app(panel_config(database_url))
    app.add_url_rule(f"{prefix}/probe", "probe", lambda: str(flask_db.session.execute(text(sql))))
    response = app.test_client().get(f"{prefix}/probe")
    assert response.status_code == 400
    said = error_of(response)
    assert f"the input cannot be stored: {ours}" in said and theirs not in said


# -- tokens end with their owner's password, account or an explicit revoke ---------------------


@pytest.mark.parametrize(
    "end",
    [
        lambda db: accounts.set_password(db, "alice", "a brand new password"),
        lambda db: accounts.set_disabled(db, "alice", True),
        lambda db: accounts.revoke_api_token(db, "alice"),
    ],
    ids=["password", "disable", "revoke"],
)
def test_a_token_ends_and_stays_ended(api, db, end):
    client, headers = api
    assert client.get("/api/stats", headers=headers).status_code == 200
    end(db)
    assert client.get("/api/stats", headers=headers).status_code == 401
    accounts.set_disabled(db, "alice", False)  # enabling again brings nothing back
    assert client.get("/api/stats", headers=headers).status_code == 401


def test_the_cli_revokes_a_token(api, db):
    client, headers = api
    run = CliRunner().invoke(cli_main, ["user", "token", "--revoke", "alice"])
    assert run.exit_code == 0, run.output
    assert client.get("/api/stats", headers=headers).status_code == 401


# -- nothing of the panel is kept by a cache -----------------------------------------------------


@pytest.mark.parametrize(
    "url", ["/", "/no_follow", "/no_follow/export.csv", "/blocked", "/roots", "/audit", "/nope"]
)
def test_every_authenticated_response_is_no_store(client, db, url):
    deny_entries.add_no_follow(db, ["gone.test"], note="why")
    assert client.get(url).headers["Cache-Control"] == "no-store"


def test_api_responses_are_no_store(api):
    client, headers = api
    assert client.get("/api/stats", headers=headers).headers["Cache-Control"] == "no-store"


# -- a session's absolute lifetime -------------------------------------------------------------


def age_login(browser, hours: float) -> None:
    with browser.session_transaction() as session:
        session[LOGGED_IN_AT] = int(time.time() - hours * 3600)


@pytest.mark.parametrize(("hours", "let_in"), [(23.9, True), (24.1, False)])
def test_a_session_ends_panel_session_max_hours_after_its_login(app, db, operators, hours, let_in):
    response, browser = attempt(app, "alice", PASSWORD)
    assert response.status_code == 302 and browser.get("/").status_code == 200
    age_login(browser, hours)  # in use all along: the idle expiry never came
    assert (browser.get("/").status_code == 200) is let_in


def test_a_session_without_its_login_time_is_over(app, db, operators):
    _, browser = attempt(app, "alice", PASSWORD)
    with browser.session_transaction() as session:
        del session[LOGGED_IN_AT]
    assert browser.get("/").status_code == 302


def test_panel_session_max_hours_comes_from_the_environment(
    monkeypatch, database_url, db, operators
):
    monkeypatch.setenv("PANEL_SESSION_MAX_HOURS", "1")
    app = create_app(panel_config(database_url))
    _, browser = attempt(app, "alice", PASSWORD)
    age_login(browser, 1.1)
    assert browser.get("/").status_code == 302


@pytest.mark.parametrize("url", ["/api/no/such/thing", "/api/stats"])
def test_api_errors_are_json_with_the_security_headers(anonymous, url):
    response = anonymous.get(url)  # 404, or 401 without a token
    assert response.status_code in (401, 404) and response.is_json
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["Cache-Control"] == "no-store"
