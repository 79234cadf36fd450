"""The operators' panel through Flask's test client: auth, CSRF, headers, escaping,
no_follow (preview, paste, public suffix, remove, CSV), blocked, audit, the API,
and the live effect on a listening crawler."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from werkzeug.routing import IntegerConverter

from crawler.db.models import Base
from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import (
    CSRF,
    PASSWORD,
    audit,
    entry_rows,
    insert_hosts,
    login,
    panel_config,
    post_form,
    set_cookie,
    shown_hosts,
)
from webpanel import create_app
from webpanel.extensions import db as flask_db
from webpanel.security import PUBLIC_ENDPOINTS

pytest_plugins = ["tests.unit.test_panel_support"]

# A hostname per endpoint argument, so every rule can be built.
SAMPLE_ARGS = {"no_follow.remove": "gone.test", "blocked.unblock": "trap.test"}


def sample_value(rule, argument: str):
    """A value the rule's converter takes: a number for <int:...>, else a hostname."""
    if isinstance(rule._converters.get(argument), IntegerConverter):
        return 1
    return SAMPLE_ARGS.get(rule.endpoint, "example.org")


def _routes() -> list:
    """Every (endpoint, url, method) of the app, read from its url_map at collection time."""
    probe = create_app(panel_config("postgresql+psycopg://nobody@127.0.0.1:9/none"))
    found = []
    with probe.test_request_context():
        for rule in probe.url_map.iter_rules():
            values = {a: sample_value(rule, a) for a in rule.arguments}
            url = probe.url_map.bind("localhost").build(rule.endpoint, values)
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
                found.append((rule.endpoint, url, method))
    return found


ROUTES = _routes()
PROTECTED = [
    pytest.param(e, u, m, id=f"{m} {u}") for e, u, m in ROUTES if e not in PUBLIC_ENDPOINTS
]
FORM_POSTS = [
    pytest.param(e, u, id=u) for e, u, m in ROUTES if m == "POST" and not e.startswith("api.")
]
API_POSTS = [pytest.param(u, id=u) for e, u, m in ROUTES if m == "POST" and e.startswith("api.")]


# -- who may see what ----------------------------------------------------------------------


def test_routes_cover_every_area():
    endpoints = {e for e, _, _ in ROUTES}
    for expected in (
        "hosts.index",
        "hosts.detail",
        "no_follow.index",
        "no_follow.add",
        "no_follow.remove",
        "no_follow.export",
        "no_follow.import_csv",
        "blocked.index",
        "blocked.unblock",
        "change_log.index",
        "api.check_host",
        "api.no_follow_add",
        "api.api_stats",
        "auth.login",
        "auth.logout",
        "health.healthz",
    ):
        assert expected in endpoints
    assert len(PROTECTED) >= 20


@pytest.mark.parametrize(("endpoint", "url", "method"), PROTECTED)
def test_every_endpoint_refuses_an_anonymous_visitor(anonymous, endpoint, url, method):
    response = anonymous.open(url, method=method)
    if endpoint.startswith("api."):
        assert response.status_code == 401
        assert response.is_json and "token" in response.json["error"]
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    else:
        assert response.status_code == 302, response.data[:200]
        assert response.location.startswith("/login")


def test_public_endpoints_need_no_login(anonymous):
    assert anonymous.get("/login").status_code == 200
    health = anonymous.get("/healthz")
    assert health.status_code == 200 and health.json["status"] == "ok"
    assert anonymous.get("/static/panel.css").status_code == 200


def test_a_database_outage_is_a_503_not_a_500():
    broken = create_app(panel_config("postgresql+psycopg://nobody@127.0.0.1:9/none"))
    client = broken.test_client()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json["status"] == "unavailable"
    login_page = client.get("/login")
    assert login_page.status_code == 503
    assert "database is unavailable" in login_page.get_data(as_text=True)
    assert login_page.headers["Retry-After"] == "10"


@pytest.mark.parametrize(("endpoint", "url"), FORM_POSTS)
def test_every_post_without_a_csrf_token_is_refused(client, db, endpoint, url):
    deny_entries.add_no_follow(db, ["gone.test"])
    deny_entries.upsert_blocked(db, "trap.test", "a trap")
    before = (entry_rows(db, "no_follow"), entry_rows(db, "blocked"), audit(db))
    data = {"entries": "new.test", "save": "Save", "note": "x", "submit": "Confirm"}
    data |= {"username": "alice", "password": PASSWORD}
    response = client.post(url, data=data)
    assert response.status_code == 400
    assert "CSRF" in response.get_data(as_text=True)
    after = (entry_rows(db, "no_follow"), entry_rows(db, "blocked"), audit(db))
    assert after == before


@pytest.mark.parametrize("url", API_POSTS)
def test_the_api_takes_no_session_cookie(client, db, url):
    """The API is CSRF-exempt because it accepts only tokens: a session gets 401."""
    response = client.post(url, json={"names": ["new.test"]})
    assert response.status_code == 401
    assert entry_rows(db, "no_follow") == {}


def test_security_headers_on_every_kind_of_page(client, anonymous):
    for response in (
        anonymous.get("/login"),
        anonymous.get("/healthz"),
        anonymous.get("/"),
        client.get("/"),
        client.get("/no_follow"),
        client.get("/static/panel.css"),
        client.get("/api/stats"),
    ):
        headers = response.headers
        csp = headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Referrer-Policy"] == "same-origin"


def test_no_inline_script_or_style_in_any_template():
    """A script is a file of the panel's own (src, empty body), never inline."""
    templates = Path(__file__).resolve().parents[2] / "webpanel" / "templates"
    own_file = re.compile(
        r"""<script src="\{\{ url_for\('static', filename='[\w.]+'\) \}\}" defer></script>"""
    )
    for path in templates.rglob("*.html"):
        source = own_file.sub("", path.read_text())
        assert "<script" not in source and "style=" not in source, path
        assert "|safe" not in source.replace(" ", ""), path


def test_session_cookie_flags(anonymous, operators):
    # Secure over https (test_panel_plain_http: plain over plain http, where it would not stick).
    tls = {"base_url": "https://localhost", "headers": {"Referer": "https://localhost/login"}}
    token = CSRF.search(anonymous.get("/login", **tls).get_data(as_text=True))[1]
    data = {"username": "alice", "password": PASSWORD, "csrf_token": token}
    response = anonymous.post("/login", data=data, **tls)
    assert response.status_code == 302
    cookie = set_cookie(response)
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" in cookie


def test_login_page_warns_when_the_password_crosses_the_network_in_clear(anonymous):
    assert "plain HTTP" not in anonymous.get("/login").get_data(as_text=True)  # localhost
    remote = anonymous.get("/login", base_url="http://panel.example")
    assert "unencrypted" in remote.get_data(as_text=True)
    over_tls = anonymous.get("/login", base_url="https://panel.example")
    assert "plain HTTP" not in over_tls.get_data(as_text=True)
    assert over_tls.headers["Strict-Transport-Security"].startswith("max-age=")


def test_session_cookie_secure_can_be_turned_off_for_local_http(monkeypatch, database_url):
    monkeypatch.setenv("SESSION_COOKIE_SECURE", "0")
    local = create_app(panel_config(database_url))
    assert local.config["SESSION_COOKIE_SECURE"] is False
    monkeypatch.setenv("SESSION_COOKIE_SECURE", "1")
    assert create_app(panel_config(database_url)).config["SESSION_COOKIE_SECURE"] is True


def test_secret_key_comes_from_the_environment_or_var(monkeypatch, tmp_path, database_url):
    config = panel_config(database_url)
    del config["SECRET_KEY"]
    monkeypatch.setenv("SECRET_KEY", "from-the-environment-" * 3)
    assert create_app(config).secret_key == "from-the-environment-" * 3
    monkeypatch.delenv("SECRET_KEY")
    monkeypatch.setenv("HOSTCRAWL_VAR", str(tmp_path))
    first = create_app(config).secret_key
    assert first == create_app(config).secret_key  # kept, not made again
    key_file = tmp_path / "secret_key"
    assert key_file.read_text() == first and len(first) >= 32
    assert key_file.stat().st_mode & 0o077 == 0


def test_flask_sqlalchemy_uses_the_shared_base(app):
    assert flask_db.metadata is Base.metadata


def test_the_panel_imports_no_scrapy_nor_twisted(database_url):
    code = (
        "import sys, webpanel;"
        "webpanel.create_app({'SQLALCHEMY_DATABASE_URI': sys.argv[1], 'SECRET_KEY': 'k' * 40});"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted')"
        " or m.startswith(('crawler.downloadermiddlewares', 'crawler.spiders',"
        " 'crawler.network')));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, database_url], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr


# -- logging in ---------------------------------------------------------------------------------


def test_there_is_no_default_account(anonymous, db):
    for username, password in [("admin", "admin"), ("admin", "password"), ("root", "root")]:
        response = login(anonymous, username, password)
        assert response.status_code == 200
        assert "Wrong username or password" in response.get_data(as_text=True)
    with db.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM users")).scalar() == 0


@pytest.mark.parametrize(
    ("next_url", "lands_on"),
    [
        ("/no_follow?q=a", "/no_follow?q=a"),
        ("//evil.example/", "/"),
        ("https://evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("javascript:alert(1)", "/"),
        ("", "/"),
    ],
)
def test_next_is_validated(anonymous, operators, next_url, lands_on):
    from urllib.parse import quote

    response = login(anonymous, "alice", PASSWORD, quote(next_url, safe=""))
    assert response.status_code == 302
    assert response.location == lands_on


# Throttling, sessions and roles: tests/unit/test_panel_accounts.py


def test_logout_is_a_post(client):
    assert client.get("/logout").status_code == 405
    response = post_form(client, "/logout", {}, page="/")
    assert response.status_code == 302
    assert client.get("/").status_code == 302  # logged out


# -- escaping ---------------------------------------------------------------------------------

SCRIPT = "<script>alert('x')</script>"


def test_web_data_renders_escaped(client, db):
    insert_hosts(db, ["evil.test"], title=SCRIPT, outcome="OK", http_status=200)
    deny_entries.upsert_blocked(db, "trap.test", f"subdomain generator {SCRIPT}")
    deny_entries.add_no_follow(db, ["noted.test"], note=SCRIPT)
    for url in ("/", "/hosts/evil.test", "/blocked", "/blocked/trap.test/unblock", "/no_follow"):
        html = client.get(url).get_data(as_text=True)
        assert "<script>" not in html, url
        assert "&lt;script&gt;" in html, url


# -- the host list --------------------------------------------------------------------------


def test_host_list_and_host_page(client, db):
    insert_hosts(db, ["a.test", "www.a.test", "b.test", "c.under.hidden.test"])
    insert_hosts(db, ["ok.test"], outcome="OK", http_status=203, title="Hello there")
    deny_entries.add_no_follow(db, ["hidden.test"])
    html = client.get("/").get_data(as_text=True)
    assert shown_hosts(html) == ["a.test", "b.test", "ok.test", "www.a.test"]
    page = client.get("/hosts/ok.test").get_data(as_text=True)
    for fact in ("OK", "203", "Hello there", "next claim"):
        assert fact in page
    hidden = client.get("/hosts/c.under.hidden.test").get_data(as_text=True)
    assert "Under the no_follow entry" in hidden and "hidden.test" in hidden
    assert client.get("/hosts/nowhere.test").status_code == 404
    assert client.get("/hosts/OK.test").location == "/hosts/ok.test"


def test_search_filters_and_sort(client, db):
    insert_hosts(db, ["www.a.test", "www.b.test", "shop.a.test", "a.test", "xa.test"])
    insert_hosts(db, ["api.b.test"], outcome="DNS_NXDOMAIN")

    def shown(query: str) -> list[str]:
        return shown_hosts(client.get("/?" + query).get_data(as_text=True))

    assert shown("q=www.") == ["www.a.test", "www.b.test"]
    assert shown("q=a.test&match=domain") == ["a.test", "shop.a.test", "www.a.test"]
    assert shown("q=b.test&match=domain&sort=newest") == ["api.b.test", "www.b.test"]
    assert shown("outcome=DNS_NXDOMAIN") == ["api.b.test"]
    assert shown("outcome=none&root=b.test") == ["www.b.test"]
    bad = client.get("/?q=bad..name&match=domain").get_data(as_text=True)
    assert "empty label" in bad and shown_hosts(bad) == []
    assert client.get("/?after=garbage").status_code == 400


def test_pages_keep_the_other_query_args(client, db):
    insert_hosts(db, [f"h{i:02}.keep.test" for i in range(12)], outcome="OK")
    html = client.get("/?q=h&outcome=OK&sort=name&n=5").get_data(as_text=True)
    link = html.split('rel="next" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    for arg in ("q=h", "outcome=OK", "sort=name", "n=5", "after="):
        assert arg in link
    second = client.get(link).get_data(as_text=True)
    assert shown_hosts(second) == [f"h{i:02}.keep.test" for i in range(5, 10)]
    back = second.split('rel="prev" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert "before=" in back and "q=h" in back
    assert shown_hosts(client.get(back).get_data(as_text=True)) == [
        f"h{i:02}.keep.test" for i in range(5)
    ]


def test_dashboard_strip(client, db):
    insert_hosts(db, ["a.test", "b.test", "c.test"], outcome="OK")
    insert_hosts(db, ["d.test"], outcome="DNS_NXDOMAIN", last_crawled_at=datetime.now(UTC))
    insert_hosts(db, ["www.social.test", "x.trap.test"])
    deny_entries.add_no_follow(db, ["social.test"])
    deny_entries.upsert_blocked(db, "trap.test", "a trap")
    html = client.get("/").get_data(as_text=True)
    assert '<dd id="stat-blocked">1</dd>' in html
    assert '<dd id="stat-no-follow">1</dd>' in html
    assert '<dd id="stat-recent">1</dd>' in html
    assert '<dd id="stat-hosts">4</dd>' in html  # not the entries nor the two hosts under them
    assert "DNS_NXDOMAIN" in html and "<svg" in html and "<rect" in html
