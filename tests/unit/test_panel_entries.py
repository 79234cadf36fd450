"""The panel's deny-entry pages and the API on real Postgres: no_follow, blocked, the audit
log, the live effect on a listening crawler."""

from __future__ import annotations

import csv
import io
import json

import psycopg
import pytest
from sqlalchemy import text

from crawler.db.operators.bulk_change_log import DENYLIST_CHANNEL
from crawler.db.rules import deny_entries
from crawler.db.server.listener import conninfo
from crawler.rules.live_deny_list import LiveDenyList
from tests.dbhelpers import record_outcome
from tests.unit.test_panel_support import (
    audit,
    entry_rows,
    give_api_token,
    insert_hosts,
    post_form,
    routing,
)
from tests.waiting import WAIT_BOUND, wait_until

pytest_plugins = ["tests.unit.test_panel_support"]


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
        conn.execute(text("UPDATE hosts SET next_claim_at = NULL WHERE hostname = 'ex.test'"))
    response = post_form(
        client, "/no_follow", {"entries": "https://EX.test:8080/path", "preview": "Preview"}
    )
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "Would exclude 3 known hosts, 2 queued" in html
    assert '<td data-label="stored as">ex.test</td>' in html  # what it would be stored as
    assert 'value="Save 1 entry"' in html
    assert entry_rows(db, "no_follow") == {}


def test_paste_many_gives_one_summary(client, db):
    deny_entries.add_no_follow(db, ["old.test"])
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
    assert ("alice", "no_follow.add", "youtube.com") not in audit(db)  # its names: change_log_items


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
    deny_entries.add_no_follow(db, ["gone.test"], note="temporary")
    assert routing(db, "www.gone.test").denied_by == "gone.test"
    confirm = client.get("/no_follow/gone.test/remove")
    assert confirm.status_code == 200 and "Remove gone.test" in confirm.get_data(as_text=True)
    assert "gone.test" in entry_rows(db, "no_follow")  # asking changed nothing
    done = post_form(client, "/no_follow/gone.test/remove", {"note": "done", "submit": "Confirm"})
    assert done.status_code == 302
    assert "gone.test" not in entry_rows(db, "no_follow")
    assert routing(db, "www.gone.test").denied_by is None
    assert ("alice", "no_follow.remove", "gone.test") in audit(db)
    assert "1 host back in routing" in client.get("/no_follow").get_data(as_text=True)
    assert client.get("/no_follow/gone.test/remove").status_code == 404


def test_no_follow_list_search_and_pages(client, db):
    names = [f"e{i:02}.test" for i in range(7)] + ["www.site.test", "site.test"]
    deny_entries.add_no_follow(db, names, actor="test")
    html = client.get("/no_follow?n=3").get_data(as_text=True)
    assert "e00.test" in html and "e03.test" not in html and 'rel="next"' in html
    found = client.get("/no_follow?q=site.test&match=domain").get_data(as_text=True)
    assert "www.site.test" in found and "e00.test" not in found
    assert "by test" in found  # who added it, from the change log


def test_audit_log_page(client, db):
    deny_entries.add_no_follow(db, ["a.test"], actor="carol", note="why not")
    deny_entries.remove_no_follow(db, ["a.test"], actor="dave")
    html = client.get("/audit").get_data(as_text=True)
    assert html.index("dave") < html.index("carol")  # newest first
    assert "no_follow.add" in html and "why not" in html
    only = client.get("/audit?action=no_follow.add").get_data(as_text=True)
    assert "carol" in only and "dave" not in only


def test_csv_export_neutralises_formulas(client, db):
    for i, note in enumerate(["=HYPERLINK(1)", "+1", "-1", "@SUM(1)", "plain, with comma"]):
        deny_entries.add_no_follow(db, [f"n{i}.test"], note=note)
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
    # the reason: a headline, its details below (crawler.core.traps.reason_parts)
    assert '<p class="headline">subdomain generator (DNS_NXDOMAIN 3, TCP_REFUSED 1)</p>' in html
    assert "<li>the last 4 unique subdomains of trap.test all failed at" in html
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


def test_an_add_reaches_a_listening_crawler(client, engine, db):
    crawler = LiveDenyList(engine)
    crawler.load()  # and starts listening
    with psycopg.connect(conninfo(engine), autocommit=True) as conn:
        conn.execute(f"LISTEN {DENYLIST_CHANNEL}")
        try:
            assert crawler.listener.ready.wait(10)
            post_form(client, "/no_follow", {"entries": "live.test", "save": "Save"})
            note = next(conn.notifies(timeout=WAIT_BOUND, stop_after=1))
            assert json.loads(note.payload) == {
                "change": "add",
                "hostname": "live.test",
                "rule": "no_follow",
            }
            wait_until(
                lambda: crawler.loaded.is_denied("www.live.test"),
                what="the crawler's deny list to change",
            )
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

    deny_entries.upsert_blocked(db, "trap.test", "a trap")
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
