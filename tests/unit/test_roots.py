"""The Roots page and its API: counters, trap window, wildcard flag, no_follow."""

from __future__ import annotations

from sqlalchemy import text

from crawler.core import config
from crawler.db.crawl import queue
from crawler.db.rules import trap_windows
from tests.dbhelpers import record_outcomes
from tests.unit.test_panel_support import give_api_token, post_form
from webpanel.queries import root_rows
from webpanel.roots import SORT_LABELS, window_text

pytest_plugins = ["tests.unit.test_panel_support"]
NEAR_BLOCK = config.setting("TRAP_NEAR_BLOCK").default


def near_block_root(db) -> None:
    """trap.test: 45 of its last 50 subdomains failed; calm.test has more hosts."""
    names = [f"s{i}.trap.test" for i in range(50)]
    queue.save_hosts(db, names + [f"h{i}.calm.test" for i in range(60)])
    outcomes = [(n, "OK") for n in names[:5]] + [(n, "DNS_NXDOMAIN") for n in names[5:]]
    assert record_outcomes(db, outcomes) == {}  # not all 50: no block


def test_a_root_with_45_failures_of_50_is_near_a_block(db):
    near_block_root(db)
    with db.connect() as conn:
        page = root_rows.root_page(conn, root_rows.RootFilter(sort="near_block"))
    first = page.rows[0]
    assert first.root == "trap.test" and first.window_failed >= NEAR_BLOCK
    assert window_text(first) == "45 of the last 50 failed"
    assert not any(r.window_failed >= NEAR_BLOCK for r in page.rows[1:])
    assert SORT_LABELS.keys() == root_rows.ROOT_SORTS.keys()  # every sort offered exists
    with db.connect() as conn:
        by_hosts = root_rows.root_page(conn, root_rows.RootFilter(sort="hosts"))
    assert [r.root for r in by_hosts.rows] == ["calm.test", "trap.test"]
    assert by_hosts.rows[0].hosts == 60 and by_hosts.rows[0].due == 60


def test_the_roots_page_shows_near_a_block_first(client, db):
    near_block_root(db)
    html = client.get("/roots?sort=near_block").get_data(as_text=True)
    assert html.index("trap.test") < html.index("calm.test")
    assert "45 of the last 50 failed" in html and "near a block" in html
    detail = client.get("/roots/trap.test").get_data(as_text=True)
    assert "s49.trap.test" in detail and "DNS_NXDOMAIN" in detail


def test_a_wildcard_zone_is_flagged_and_one_click_puts_it_on_no_follow(client, db):
    queue.save_hosts(db, [f"f{i}.farm.test" for i in range(25)])
    trap_windows.save_wildcard_probe(db, "farm.test", "hc-0123.farm.test", "DNS_ALIVE")
    html = client.get("/roots?wildcards=1").get_data(as_text=True)
    assert "wildcard zone" in html and "Put on no_follow" in html
    response = post_form(client, "/roots/farm.test/no-follow", {}, page="/roots")
    assert response.status_code == 302
    with db.connect() as conn:
        rule = conn.execute(
            text("SELECT status_reason FROM queue WHERE hostname = 'farm.test'")
        ).scalar()
        logged = conn.execute(
            text("SELECT actor, action FROM change_log WHERE hostname = 'farm.test'")
        ).all()
    assert rule == "no_follow"
    assert logged and logged[0].actor == "alice"
    after = client.get("/roots/farm.test").get_data(as_text=True)
    assert "(no_follow)" in after


def test_a_post_without_its_csrf_token_is_refused(client, db):
    queue.save_hosts(db, ["a.farm.test"])
    assert client.post("/roots/farm.test/no-follow").status_code == 400


def test_api_roots_returns_the_same_data(app, db, operators):
    near_block_root(db)
    trap_windows.save_wildcard_probe(db, "calm.test", "hc-1.calm.test", "DNS_NXDOMAIN")
    headers = give_api_token(db, "alice", "alice-token")
    body = app.test_client().get("/api/roots?sort=near_block", headers=headers).json
    first = body["roots"][0]
    assert first["root"] == "trap.test" and first["near_block"] is True
    assert first["window"] == {"failed": 45, "size": 50}
    calm = body["roots"][1]
    assert calm["wildcard"] is False and calm["wildcard_probe"]["outcome"] == "DNS_NXDOMAIN"
    assert calm["budget"] == 3600 and calm["claimed_this_hour"] == 0


def test_a_roots_page_lists_the_root_and_its_subdomains_only(db):
    queue.save_hosts(db, ["farm.test", "a.farm.test", "b.c.farm.test", "a-farm.test", "x.test"])
    with db.connect() as conn:
        page = root_rows.subdomain_page(conn, "farm.test")
    assert sorted(r.hostname for r in page.rows) == ["a.farm.test", "b.c.farm.test", "farm.test"]
