"""The main page shows what its list shows: with a blocked trap root and a no_follow root,
neither name nor any host under them appears on `/` (figures, outcome links, both SVG
charts) nor in the /api endpoints that feed it, and every count is the list's count."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import give_api_token
from webpanel.queries import dashboard

pytest_plugins = ["tests.unit.test_panel_support"]

TRAP = "trap3.test"  # blocked once its 61 hosts failed
SOCIAL = "social.test"  # no_follow, with hosts saved before it was added
DENIED = (TRAP, SOCIAL)
SHOWN_ROOTS = {"big.test": 12, "small.test": 3}


def crawl(db, names: list[str], outcome: str) -> None:
    queue.finish_many(db, [Crawled(name, CrawlResult(outcome)) for name in names])


@pytest.fixture
def crawled(db):
    """Shown: 12 hosts of big.test (8 OK, 2 DNS_NXDOMAIN, 2 never crawled) and 3 of
    small.test. Hidden: 61 DNS_NXDOMAIN hosts of a blocked trap, 20 of a no_follow root
    (5 of them crawled OK), and both entries."""
    big = [f"h{i}.big.test" for i in range(12)]
    small = ["a.small.test", "b.small.test", "small.test"]
    trap = [f"x{i}.{TRAP}" for i in range(61)]
    social = [f"u{i}.{SOCIAL}" for i in range(20)]
    queue.save_hosts(db, big + small + trap + social)
    crawl(db, big[:8] + small, "OK")
    crawl(db, big[8:10] + trap, "DNS_NXDOMAIN")
    crawl(db, social[:5], "OK")
    deny_entries.upsert_blocked(db, TRAP, "subdomain generator: 61 of 61 failed")
    deny_entries.add_no_follow(db, [SOCIAL], note="a platform")
    with db.begin() as conn:
        conn.execute(text("ANALYZE hosts"))
    return db


@pytest.fixture(params=["counted", "estimated"])
def mode(request, monkeypatch):
    """Both kinds of strip: counted (small database) and the planner's estimates (big)."""
    if request.param == "estimated":
        monkeypatch.setattr(dashboard, "EXACT_BELOW", 1)
    return request.param


def names_denied(body: str) -> list[str]:
    return [name for name in DENIED if name in body]


def list_rows(api, **args) -> list[dict]:
    """Every row of /api/hosts for `args`, over every page."""
    rows, after = [], None
    while True:
        query = {"n": 500, **args, **({"after": after} if after else {})}
        page = api.get("/api/hosts", query_string=query).get_json()
        rows += page["hosts"]
        if not (after := page["next"]):
            return rows


@pytest.fixture
def api(client, crawled):
    headers = give_api_token(crawled, "alice", "t" * 32)

    class Api:
        def get(self, url, **kwargs):
            response = client.get(url, headers=headers, **kwargs)
            assert response.status_code == 200, response.get_data(as_text=True)
            return response

    return Api()


def test_the_main_page_names_no_denied_host(client, crawled, mode):
    html = client.get("/").get_data(as_text=True)
    assert html.count("<svg") == 4 and "big.test: 12 hosts" in html  # health, hours twice, roots
    assert names_denied(html) == []
    assert f".{TRAP}" not in html and f".{SOCIAL}" not in html


def test_every_count_on_the_main_page_is_the_lists(client, api, mode):
    html = client.get("/").get_data(as_text=True)
    links = re.findall(
        r'<a href="/\?outcome=([^"]+)">[^<]+</a> <span class="n">([^<]+)</span>', html
    )
    shown = {outcome: int(n.removeprefix("≈ ").replace(",", "")) for outcome, n in links}
    assert shown == {"OK": 11, "DNS_NXDOMAIN": 2, "none": 2}
    for outcome, n in shown.items():  # each link leads to a list of as many rows
        assert len(list_rows(api, outcome=outcome)) == n
        page = client.get(f"/?outcome={outcome}&n=500").get_data(as_text=True)
        assert page.count('<a class="host"') == n
    known = re.search(r'<dd id="stat-hosts">([^<]+)</dd>', html).group(1)
    assert int(known.removeprefix("≈ ")) == len(list_rows(api)) == 15


def test_the_charts_count_only_shown_hosts(api, mode):
    figures = api.get("/api/stats").get_json()
    assert {r["root"]: r["hosts"] for r in figures["top_roots"]} == SHOWN_ROOTS
    for domain, n in SHOWN_ROOTS.items():
        assert len(list_rows(api, root=domain)) == n
    timeline = figures["timeline"]
    assert sum(timeline["discovered"]) == 15  # not the trap's 61 nor social's 20
    assert sum(timeline["crawled"]) == 13
    assert sum(timeline["crawled_by_outcome"]["NETWORK"]) == 2
    assert figures["hosts_known"] == 15


def test_the_api_feeding_the_main_page_names_no_denied_host(api, mode):
    for url in ("/api/stats", "/api/hosts?n=500", "/api/hosts?outcome=DNS_NXDOMAIN"):
        assert names_denied(api.get(url).get_data(as_text=True)) == [], url


def test_roots_blocked_and_no_follow_still_show_the_denied_roots(client, crawled):
    roots = client.get("/roots?n=500").get_data(as_text=True)
    assert TRAP in roots and SOCIAL in roots and "(blocked)" in roots and "(no_follow)" in roots
    assert TRAP in client.get("/blocked").get_data(as_text=True)
    assert SOCIAL in client.get("/no_follow").get_data(as_text=True)


def test_a_host_a_stale_worker_saved_under_an_entry_is_named_nowhere(client, api, crawled):
    """Saved after the entry took its subtree out of routing: no denied_by, yet hidden
    from the list, and its root (a no_follow entry) from the chart of top roots. (The
    figures count it: they subtract the rows the entries took out of routing.)"""
    with crawled.begin() as conn:
        conn.execute(text("UPDATE hosts SET denied_by = NULL WHERE hostname = 'u0.social.test'"))
    assert names_denied(client.get("/").get_data(as_text=True)) == []
    assert names_denied(api.get("/api/stats").get_data(as_text=True)) == []
    assert "u0.social.test" not in {row["hostname"] for row in list_rows(api)}


@pytest.mark.parametrize("n", [1, 2, 10])
def test_the_top_roots_walk_past_the_denied_ones_a_batch_at_a_time(crawled, monkeypatch, n):
    """The two biggest roots are denied: a walk in batches of 2 finds the shown ones."""
    monkeypatch.setattr(dashboard, "TOP_ROOTS_BATCH", 2)
    with crawled.connect() as conn:
        assert dashboard.top_roots(conn, n) == list(SHOWN_ROOTS.items())[:n]
