"""API errors: the API answers JSON for every error and never 500 for bad input;
/healthz says ok or unavailable and nothing more."""

from __future__ import annotations

import io
import logging

import pytest

from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import give_api_token, panel_config, post_form
from webpanel import create_app

pytest_plugins = ["tests.unit.test_panel_support"]


@pytest.fixture
def api(app, db, operators):
    """A test client and the headers of alice's API token."""
    return app.test_client(), give_api_token(db, "alice", "alice-token")


def assert_json_error(response, status: int) -> str:
    assert response.status_code == status, response.data[:300]
    assert response.mimetype == "application/json", response.data[:300]
    assert isinstance(response.json["error"], str) and response.json["error"]
    return response.json["error"]


def nested(depth: int) -> str:
    return '{"names": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.mark.parametrize(
    ("body", "content_type", "status", "says"),
    [
        pytest.param("names=a.test", "application/x-www-form-urlencoded", 415, "JSON", id="form"),
        pytest.param("not json at all", "application/json", 400, "not JSON", id="garbage"),
        pytest.param(b"\xff\xfe\x00{", "application/json", 400, "not JSON", id="bad-bytes"),
        pytest.param("[1, 2]", "application/json", 400, "object", id="a-list"),
        pytest.param(nested(33), "application/json", 400, "deeper than 32", id="depth-33"),
        pytest.param(nested(100_000), "application/json", 400, "deeper than 32", id="depth-1e5"),
        pytest.param('{"names": "a.test"}', "application/json", 400, "names", id="not-a-list"),
    ],
)
def test_bad_bodies_are_json_errors_not_500(api, body, content_type, status, says):
    client, headers = api
    response = client.post(
        "/api/no_follow/add", data=body, content_type=content_type, headers=headers
    )
    assert says in assert_json_error(response, status)


def test_nesting_up_to_32_is_read(api):
    client, headers = api
    response = client.post(
        "/api/no_follow/add", data=nested(32), content_type="application/json", headers=headers
    )
    # Parsed (depth 32 is allowed), then refused for what it holds: names must be strings.
    assert '"names"' in assert_json_error(response, 400)


def test_a_list_over_the_limit_is_a_json_413(api, db):
    client, headers = api
    names = [f"n{i}.test" for i in range(10_001)]
    response = client.post("/api/no_follow/add", json={"names": names}, headers=headers)
    assert "10,000" in assert_json_error(response, 413).replace("10000", "10,000")
    assert deny_entries.deny_entries(db) == []


def test_every_http_error_of_the_api_is_json(api, database_url):
    client, headers = api
    assert_json_error(client.get("/api/no_follow"), 401)
    assert_json_error(client.get("/api/no/such/thing", headers=headers), 404)
    assert_json_error(client.get("/api/no/such/thing"), 404)
    wrong_method = client.get("/api/no_follow/add", headers=headers)
    assert_json_error(wrong_method, 405)
    assert "POST" in wrong_method.headers["Allow"]
    small = create_app(panel_config(database_url, MAX_CONTENT_LENGTH=1000)).test_client()
    too_big = small.post("/api/no_follow/add", json={"names": ["a.test"] * 500}, headers=headers)
    assert_json_error(too_big, 413)


def test_the_pages_keep_their_html_errors(client):
    response = client.get("/no/such/page")
    assert response.status_code == 404 and response.mimetype == "text/html"


def test_healthz_says_ok_and_nothing_else(anonymous):
    response = anonymous.get("/healthz")
    assert response.status_code == 200 and response.json == {"status": "ok"}


def test_healthz_down_says_unavailable_and_logs_the_detail(caplog):
    broken = create_app(panel_config("postgresql+psycopg://nobody@127.0.0.1:9/none"))
    with caplog.at_level(logging.WARNING, logger="webpanel.health"):
        response = broken.test_client().get("/healthz")
    assert response.status_code == 503 and response.json == {"status": "unavailable"}
    assert any("127.0.0.1" in r.getMessage() or "connect" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("code", [400, 401, 403, 404, 405, 413, 415, 429, 500])
def test_every_error_code_under_api_is_json(monkeypatch, database_url, code):
    """Whatever raises it: abort(), werkzeug, or an exception nobody caught (500)."""
    from flask import abort

    from webpanel import security

    monkeypatch.setattr(security, "PUBLIC_ENDPOINTS", security.PUBLIC_ENDPOINTS | {"probe"})
    app = create_app(panel_config(database_url))
    app.config["PROPAGATE_EXCEPTIONS"] = False

    def probe():
        if code == 500:
            raise RuntimeError("a bug")
        abort(code, description=f"probe {code}")

    app.add_url_rule("/api/probe", "probe", probe, methods=["GET"])
    response = app.test_client().get("/api/probe")
    error = assert_json_error(response, code)
    assert error == ("internal error" if code == 500 else f"probe {code}")


HUGE_CELL = "x" * 200_000  # past the csv module's field limit (131,072)


@pytest.mark.parametrize("where", ["upload", "hidden copy"])
def test_a_csv_cell_over_the_field_limit_is_a_400_naming_the_line(client, db, where):
    data = f"hostname,note\nok.test,fine\nbig.test,{HUGE_CELL}\n"
    if where == "upload":
        form = {"file": (io.BytesIO(data.encode()), "big.csv"), "preview": "Preview"}
        response = post_form(client, "/no_follow/import", form, content_type="multipart/form-data")
    else:
        form = {"csv_text": data, "save": "Import"}
        response = post_form(client, "/no_follow/import", form)
    assert response.status_code == 400
    assert "line 3: not a hostname,note CSV row (field larger than field limit" in (
        response.get_data(as_text=True)
    )
    assert deny_entries.deny_entries(db) == []
