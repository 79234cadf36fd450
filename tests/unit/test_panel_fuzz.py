"""The panel under hostile values: a 4xx with a message or a success, never a 500."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.unit.test_panel_support import csrf_token, give_api_token

pytest_plugins = ["tests.unit.test_panel_support"]

HOSTILE = st.one_of(
    st.text(max_size=300),
    st.text(st.characters(max_codepoint=0x1F), max_size=50),  # control characters
    st.sampled_from(
        [
            "'; DROP TABLE hosts; --",
            "<script>alert(1)</script>",
            "\x00",
            "%00",
            "../../etc",
            "a" * 5000,
            "x." * 200,
            "*",
            "*.",
            "[::1",
            "http://[",
            "=cmd|' /C calc'!A0",
            "\u202e",
            "' OR 1=1 --",
            "{{7*7}}",
            "\r\nSet-Cookie: x=1",
            "é" * 300,
        ]
    ),
)
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def assert_answered(response) -> None:
    assert response.status_code < 500, response.get_data(as_text=True)[:500]
    if response.status_code >= 400:
        assert response.get_data(as_text=True).strip(), "an error without a message"


@pytest.fixture
def api_headers(db, operators) -> dict:
    return give_api_token(db, "alice", "fuzz-token")


@FUZZ
@given(entries=HOSTILE, note=HOSTILE, save=st.booleans())
def test_no_follow_form(client, entries, note, save):
    data = {"entries": entries, "note": note, "csrf_token": csrf_token(client)}
    data["save" if save else "preview"] = "1"
    assert_answered(client.post("/no_follow", data=data))


@FUZZ
@given(names=st.lists(HOSTILE, max_size=5), note=st.one_of(st.none(), HOSTILE))
def test_api_no_follow_add_and_remove(client, api_headers, names, note):
    for url in ("/api/no_follow/add", "/api/no_follow/remove", "/api/blocked/unblock"):
        body = {"names": names, "note": note}
        assert_answered(client.post(url, json=body, headers=api_headers))


@FUZZ
@given(value=HOSTILE)
@example(value="\x00")  # Postgres stores no NUL: once a 500
@example(value="\x80")  # a bad IDNA search term on /audit: once a 500
def test_queries_and_lookups(client, api_headers, value):
    for url, params in (
        ("/", {"q": value, "outcome": value, "root": value, "sort": value, "after": value}),
        ("/no_follow", {"q": value, "after": value, "before": value}),
        ("/blocked", {"q": value}),
        ("/audit", {"q": value}),
        ("/api/check_host", {"name": value}),
        ("/api/no_follow", {"q": value, "match": value}),
    ):
        headers = api_headers if url.startswith("/api") else {}
        assert_answered(client.get(url, query_string=params, headers=headers))
    assert_answered(client.get("/hosts/" + value.replace("/", "%2F")))


@FUZZ
@given(username=HOSTILE, password=HOSTILE)
def test_login_form(anonymous, username, password):
    data = {
        "username": username,
        "password": password,
        "csrf_token": csrf_token(anonymous, "/login"),
    }
    assert_answered(anonymous.post("/login", data=data))
