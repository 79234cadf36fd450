"""The operators' panel through Flask's test client: auth, CSRF, headers, escaping,
no_follow (preview, paste, public suffix, remove, CSV), blocked, audit, the API,
and the live effect on a listening crawler."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text
from werkzeug.routing import IntegerConverter

from crawler.db import entries
from crawler.db.entries import DENYLIST_CHANNEL
from crawler.db.listener import conninfo
from crawler.db.models import Base
from crawler.livedenylist import LiveDenyList
from tests.dbhelpers import record_outcome
from tests.unit.test_panel_support import (
    PASSWORD,
    give_api_token,
    insert_hosts,
    login,
    panel_config,
    post_form,
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


def entry_rows(engine, rule: str) -> dict[str, str | None]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT hostname, note FROM queue WHERE status_reason = :r"), {"r": rule}
        )
        return dict(rows.all())


def audit(engine) -> list[tuple[str, str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT actor, action, hostname FROM audit_log ORDER BY id"))
        return [tuple(r) for r in rows]


def routing(engine, hostname: str):
    with engine.connect() as conn:
        return conn.execute(
            text("SELECT status_reason, denied_by, next_claim_at FROM queue WHERE hostname = :h"),
            {"h": hostname},
        ).one()


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
        "audit.index",
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
    entries.add_no_follow(db, ["gone.test"])
    entries.upsert_blocked(db, "trap.test", "a trap")
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
    templates = Path(__file__).resolve().parents[2] / "webpanel" / "templates"
    for path in templates.rglob("*.html"):
        source = path.read_text()
        assert "<script" not in source and "style=" not in source, path
        assert "|safe" not in source.replace(" ", ""), path


def test_session_cookie_flags(anonymous, operators):
    response = login(anonymous, "alice", PASSWORD)
    assert response.status_code == 302
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" in cookie


def test_login_page_warns_when_the_secure_cookie_cannot_stick(anonymous):
    assert "plain HTTP" not in anonymous.get("/login").get_data(as_text=True)  # localhost
    remote = anonymous.get("/login", base_url="http://panel.example")
    assert "SESSION_COOKIE_SECURE=0" in remote.get_data(as_text=True)
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
        " or m in ('crawler.middlewares', 'crawler.spiders', 'crawler.resolver'));"
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
    entries.upsert_blocked(db, "trap.test", f"subdomain generator {SCRIPT}")
    entries.add_no_follow(db, ["noted.test"], note=SCRIPT)
    for url in ("/", "/hosts/evil.test", "/blocked", "/blocked/trap.test/unblock", "/no_follow"):
        html = client.get(url).get_data(as_text=True)
        assert "<script>" not in html, url
        assert "&lt;script&gt;" in html, url


# -- the host list --------------------------------------------------------------------------


def test_host_list_and_host_page(client, db):
    insert_hosts(db, ["a.test", "www.a.test", "b.test", "c.under.hidden.test"])
    insert_hosts(db, ["ok.test"], outcome="OK", http_status=203, title="Hello there")
    entries.add_no_follow(db, ["hidden.test"])
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
    entries.add_no_follow(db, ["social.test"])
    entries.upsert_blocked(db, "trap.test", "a trap")
    html = client.get("/").get_data(as_text=True)
    assert '<dd id="stat-blocked">1</dd>' in html
    assert '<dd id="stat-no-follow">1</dd>' in html
    assert '<dd id="stat-recent">1</dd>' in html
    assert '<dd id="stat-hosts">6</dd>' in html  # not the two entries' own rows (issue 13)
    assert "DNS_NXDOMAIN" in html and "<svg" in html and "<rect" in html


# -- no_follow --------------------------------------------------------------------------------


def test_bad_input_shows_its_reason_beside_the_field_and_stores_nothing(client, db):
    response = post_form(client, "/no_follow", {"entries": "bad..test", "preview": "Preview"})
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    beside = html.split('<div class="beside">', 1)[1].split("</div>", 1)[0]
    assert "<textarea" in beside and "entries-errors" in beside
    assert "&#39;bad..test&#39;: empty label" in beside
    assert "Save" not in html.split('id="entries-errors"', 1)[1].split("</form>", 1)[0]
    assert entry_rows(db, "no_follow") == {} and audit(db) == []
    empty = post_form(client, "/no_follow", {"entries": "", "preview": "Preview"})
    assert empty.status_code == 400 and "give at least one domain" in empty.get_data(as_text=True)
    assert entry_rows(db, "no_follow") == {}


def test_preview_counts_what_an_entry_would_take_and_stores_nothing(client, db):
    insert_hosts(db, ["ex.test", "www.ex.test", "a.b.ex.test", "notex.test"])
    with db.begin() as conn:
        conn.execute(text("UPDATE queue SET next_claim_at = NULL WHERE hostname = 'ex.test'"))
    response = post_form(
        client, "/no_follow", {"entries": "https://EX.test:8080/path", "preview": "Preview"}
    )
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "Would exclude 3 known hosts, 2 queued" in html
    assert "<td>ex.test</td>" in html  # what it would be stored as
    assert 'value="Save 1 entry"' in html
    assert entry_rows(db, "no_follow") == {}


def test_paste_many_gives_one_summary(client, db):
    entries.add_no_follow(db, ["old.test"])
    pasted = "Example.ORG:8080\nbad..test\n\n# a comment\nhttps://*.YouTube.com/x\nold.test\ncom"
    response = post_form(client, "/no_follow", {"entries": pasted, "note": "big", "save": "Save"})
    html = response.get_data(as_text=True)
    assert "added 2, already present 1, refused 2" in html
    assert "Example.ORG:8080 → example.org: added" in html
    assert "&#39;bad..test&#39;: empty label" in html
    assert "&#39;com&#39;: a bare public suffix" in html
    assert entry_rows(db, "no_follow") == {
        "old.test": None,
        "example.org": "big",
        "youtube.com": "big",
    }
    assert ("alice", "no_follow.add", "example.org") in audit(db)  # one row for the batch
    assert ("alice", "no_follow.add", "youtube.com") not in audit(db)  # its names: audit_items


def test_a_bare_public_suffix_needs_confirmation(client, db):
    refused = post_form(client, "/no_follow", {"entries": "co.uk", "preview": "Preview"})
    assert refused.status_code == 400
    assert "tick the box below to store it anyway" in refused.get_data(as_text=True)
    forced = post_form(
        client, "/no_follow", {"entries": "co.uk", "force": "y", "preview": "Preview"}
    )
    assert forced.status_code == 200 and "Save 1 entry" in forced.get_data(as_text=True)
    assert entry_rows(db, "no_follow") == {}
    saved = post_form(client, "/no_follow", {"entries": "co.uk", "force": "y", "save": "Save"})
    assert "added 1" in saved.get_data(as_text=True)
    assert "co.uk" in entry_rows(db, "no_follow")


def test_remove_asks_first_then_puts_hosts_back(client, db):
    insert_hosts(db, ["www.gone.test"])
    entries.add_no_follow(db, ["gone.test"], note="temporary")
    assert routing(db, "www.gone.test").denied_by == "gone.test"
    confirm = client.get("/no_follow/gone.test/remove")
    assert confirm.status_code == 200 and "Remove gone.test" in confirm.get_data(as_text=True)
    assert "gone.test" in entry_rows(db, "no_follow")  # asking changed nothing
    done = post_form(client, "/no_follow/gone.test/remove", {"note": "done", "submit": "Confirm"})
    assert done.status_code == 302
    assert "gone.test" not in entry_rows(db, "no_follow")
    assert routing(db, "www.gone.test").denied_by is None
    assert ("alice", "no_follow.remove", "gone.test") in audit(db)
    assert "1 hosts back in routing" in client.get("/no_follow").get_data(as_text=True)
    assert client.get("/no_follow/gone.test/remove").status_code == 404


def test_no_follow_list_search_and_pages(client, db):
    names = [f"e{i:02}.test" for i in range(7)] + ["www.site.test", "site.test"]
    entries.add_no_follow(db, names, actor="test")
    html = client.get("/no_follow?n=3").get_data(as_text=True)
    assert "e00.test" in html and "e03.test" not in html and 'rel="next"' in html
    found = client.get("/no_follow?q=site.test&match=domain").get_data(as_text=True)
    assert "www.site.test" in found and "e00.test" not in found
    assert "by test" in found  # who added it, from the audit log


def test_audit_log_page(client, db):
    entries.add_no_follow(db, ["a.test"], actor="carol", note="why not")
    entries.remove_no_follow(db, ["a.test"], actor="dave")
    html = client.get("/audit").get_data(as_text=True)
    assert html.index("dave") < html.index("carol")  # newest first
    assert "no_follow.add" in html and "why not" in html
    only = client.get("/audit?action=no_follow.add").get_data(as_text=True)
    assert "carol" in only and "dave" not in only


def test_csv_export_neutralises_formulas(client, db):
    for i, note in enumerate(["=HYPERLINK(1)", "+1", "-1", "@SUM(1)", "plain, with comma"]):
        entries.add_no_follow(db, [f"n{i}.test"], note=note)
    response = client.get("/no_follow/export.csv")
    assert response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.get_data(as_text=True))))
    assert rows[0] == ["hostname", "note"]
    notes = dict(rows[1:])
    assert notes == {
        "n0.test": "'=HYPERLINK(1)",
        "n1.test": "'+1",
        "n2.test": "'-1",
        "n3.test": "'@SUM(1)",
        "n4.test": "plain, with comma",
    }


def test_csv_import_previews_then_saves(client, db):
    data = "hostname,note\nimp.test,'=from export\nBad..Test,x\nwww.imp2.test,\n"
    upload = {"file": (io.BytesIO(data.encode()), "entries.csv"), "preview": "Preview"}
    preview = post_form(
        client, "/no_follow/import", upload, content_type="multipart/form-data"
    ).get_data(as_text=True)
    assert "Import 2 entries" in preview and "empty label" in preview
    assert entry_rows(db, "no_follow") == {}
    hidden = preview.split('name="csv_text" type="hidden" value="', 1)[1].split('"', 1)[0]
    import html as htmllib

    saved = post_form(
        client,
        "/no_follow/import",
        {"csv_text": htmllib.unescape(hidden), "save": "Import"},
        page="/no_follow/import",
    ).get_data(as_text=True)
    assert "added 2, already present 0, refused 1" in saved
    assert entry_rows(db, "no_follow") == {"imp.test": "=from export", "www.imp2.test": None}


# -- blocked -------------------------------------------------------------------------------------


def test_blocked_shows_reason_and_evidence_and_unblocks(client, db):
    insert_hosts(db, ["live.trap.test"])
    for i in range(4):
        record_outcome(db, f"j{i}.trap.test", "DNS_NXDOMAIN" if i else "TCP_REFUSED", size=4)
    assert routing(db, "live.trap.test").denied_by == "trap.test"
    html = client.get("/blocked").get_data(as_text=True)
    assert "subdomain generator: the last 4 unique subdomains of trap.test" in html
    assert 'DNS_NXDOMAIN <span class="n">3</span>' in html
    assert 'TCP_REFUSED <span class="n">1</span>' in html
    assert "j3.trap.test" in html
    assert (
        client.get("/blocked?q=other.test&match=domain").get_data(as_text=True).count("trap.test")
        == 0
    )
    confirm = client.get("/blocked/trap.test/unblock").get_data(as_text=True)
    assert "Unblock trap.test" in confirm and "blocked_reason" in confirm
    assert "trap.test" in entry_rows(db, "blocked")
    done = post_form(client, "/blocked/trap.test/unblock", {"note": "false positive"})
    assert done.status_code == 302
    assert entry_rows(db, "blocked") == {}
    assert routing(db, "live.trap.test").denied_by is None
    assert ("alice", "unblock", "trap.test") in audit(db)


# -- the live effect -----------------------------------------------------------------------------


def test_an_add_reaches_a_listening_crawler_within_5_seconds(client, engine, db):
    crawler = LiveDenyList(engine)
    crawler.load()  # and starts listening
    with psycopg.connect(conninfo(engine), autocommit=True) as conn:
        conn.execute(f"LISTEN {DENYLIST_CHANNEL}")
        try:
            assert crawler.listener.ready.wait(10)
            start = time.monotonic()
            post_form(client, "/no_follow", {"entries": "live.test", "save": "Save"})
            note = next(conn.notifies(timeout=5, stop_after=1))
            assert json.loads(note.payload) == {
                "change": "add",
                "hostname": "live.test",
                "rule": "no_follow",
            }
            while not crawler.loaded.is_denied("www.live.test"):
                assert time.monotonic() - start < 5, "the crawler's deny list never changed"
                time.sleep(0.02)
        finally:
            crawler.stop()


# -- the API ---------------------------------------------------------------------------------


@pytest.fixture
def token(db, operators) -> str:
    give_api_token(db, "bob", "bob-token")
    return "bob-token"


def test_api(app, db, token):
    api = app.test_client()
    auth = {"Authorization": f"Bearer {token}"}
    insert_hosts(db, ["www.social.test"])
    assert api.get("/api/stats", headers={"Authorization": "Bearer wrong"}).status_code == 401

    added = api.post(
        "/api/no_follow/add", json={"names": ["Social.test", "bad..x"], "note": "n"}, headers=auth
    )
    assert added.status_code == 200
    assert added.json["ok"] is False
    assert [r["status"] for r in added.json["results"]] == ["added", "refused"]
    assert added.json["results"][0]["hostname"] == "social.test"
    assert ("bob", "no_follow.add", "social.test") in audit(db)

    check = api.get("/api/check_host?name=https://WWW.social.test:443/x", headers=auth).json
    assert check == {
        "input": "https://WWW.social.test:443/x",
        "hostname": "www.social.test",
        "denied": True,
        "entry": "social.test",
        "rule": "no_follow",
    }
    assert api.get("/api/check_host?name=other.test", headers=auth).json["denied"] is False
    assert api.get("/api/check_host?name=a..b", headers=auth).status_code == 400

    listed = api.get("/api/no_follow", headers=auth).json
    assert [e["hostname"] for e in listed["entries"]] == ["social.test"]
    assert listed["entries"][0]["took_out"] == 1

    entries.upsert_blocked(db, "trap.test", "a trap")
    assert api.get("/api/blocked", headers=auth).json["entries"][0]["blocked_reason"] == "a trap"
    unblocked = api.post("/api/blocked/unblock", json={"names": ["trap.test"]}, headers=auth)
    assert unblocked.json["results"][0]["status"] == "unblocked"
    removed = api.post(
        "/api/no_follow/remove", json={"names": ["social.test", "nope.test"]}, headers=auth
    )
    assert [r["status"] for r in removed.json["results"]] == ["removed", "absent"]

    stats = api.get("/api/stats", headers=auth).json
    assert stats["no_follow"] == 0 and stats["hosts_known"] >= 1
    assert api.post("/api/no_follow/add", data="nope", headers=auth).status_code == 415
    assert api.post("/api/no_follow/add", json={"names": "x"}, headers=auth).status_code == 400
