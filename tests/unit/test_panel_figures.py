"""Every figure on a page is over what the page says it is over, and is current.

`/` and GET /api/stats never name, nor count, a host the list hides, even when the
entry was added by another process (the CLI, a worker) while the figures were cached;
"Found in the last 24 hours, by source" leaves out the hidden hosts like every other
figure; on /roots a blocked root reads "blocked", never "near a block".
"""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text

from crawler.core.hostnames import root
from crawler.core.links import FoundName
from crawler.db.crawl import queue, retention
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import deny_entries
from tests.dbhelpers import record_outcomes
from tests.unit.test_panel_support import give_api_token, panel_config
from webpanel import create_app
from webpanel.dashboard_cache import EXTENSION as DASHBOARD_CACHE
from webpanel.queries import dashboard
from webpanel.security import LOGGED_IN_AT

pytest_plugins = ["tests.unit.test_panel_support"]

SHOWN = [f"h{i}.big.test" for i in range(5)]
SOCIAL = [f"u{i}.social.test" for i in range(3)]


@pytest.fixture(scope="module")
def cached_app(database_url):
    """A panel that keeps its figures for an hour, as a busy one would."""
    return create_app(panel_config(database_url, STATS_TTL=3600))


@pytest.fixture
def cached(cached_app, operators):
    """alice, logged in to the caching panel, with her API token in `headers`."""
    client = cached_app.test_client()
    with client.session_transaction() as session:
        session["_user_id"] = f"{operators['alice']}.1"
        session["_fresh"] = True
        session[LOGGED_IN_AT] = int(time.time())
    cached_app.extensions[DASHBOARD_CACHE]._value = None  # nothing of an earlier test
    return client


def found(db, names: list[str], source: str) -> None:
    with db.begin() as conn:
        named = [FoundName(n, root(n), "a href", source) for n in names]
        queue.insert_hosts(conn, [("page.test", named)])


def test_an_entry_added_by_another_process_leaves_the_cached_figures_at_once(db, cached):
    found(db, SHOWN + SOCIAL, "links")
    headers = give_api_token(db, "alice", "f" * 32)
    before = cached.get("/api/stats", headers=headers).get_json()
    assert {"root": "social.test", "hosts": 3} in before["top_roots"]
    assert "social.test" in cached.get("/").get_data(as_text=True)

    # The CLI's or a worker's write: the panel is not told, it must find out.
    deny_entries.add_no_follow(db, ["social.test"], "cli", note="a platform")

    page = cached.get("/").get_data(as_text=True)
    assert "social.test" not in page
    assert '<dd id="stat-hosts">5</dd>' in page
    stats = cached.get("/api/stats", headers=headers).get_json()
    assert stats["top_roots"] == [{"root": "big.test", "hosts": 5}]
    assert stats["hosts_known"] == 5 and stats["found_by_source"] == {"links": 5}


def test_a_change_that_commits_after_a_later_one_still_moves_the_generation(db):
    """Two writers: the first takes its change-log id, the second commits first; the
    figures computed between must still be found stale when the first commits."""
    insert = text(
        "INSERT INTO change_log (actor, action, hostname) VALUES ('t', 'no_follow.add', :h)"
    )
    with db.connect() as slow:
        slow.begin()
        slow.execute(insert, {"h": "slow.test"})
        with db.begin() as fast:
            fast.execute(insert, {"h": "fast.test"})
        with db.connect() as conn:
            between = dashboard.entries_generation(conn)
        slow.commit()
    with db.connect() as conn:
        later = dashboard.entries_generation(conn)
    assert later.covers(between) and not between.covers(later)


def test_a_forgotten_crawl_leaves_the_cached_figures_at_once(db, cached):
    """A new demo empties the crawl, its change log too (lower ids than the cached
    figures'): the cache must not keep serving the previous crawl's figures (issue 53)."""
    found(db, SHOWN, "links")
    deny_entries.add_no_follow(db, ["elsewhere.test"], "cli")
    assert f'<dd id="stat-hosts">{len(SHOWN)}</dd>' in cached.get("/").get_data(as_text=True)
    retention.forget_the_crawl(db)
    assert '<dd id="stat-hosts">0</dd>' in cached.get("/").get_data(as_text=True)


def test_found_by_source_leaves_out_the_hosts_the_list_hides(client, db):
    found(db, SHOWN, "links")
    found(db, SOCIAL + ["social.test"], "links")
    found(db, ["x.trap.test", "y.trap.test"], "scripts")
    deny_entries.add_no_follow(db, ["social.test"], note="a platform")
    deny_entries.upsert_blocked(db, "trap.test", "subdomain generator")
    headers = give_api_token(db, "alice", "g" * 32)
    stats = client.get("/api/stats", headers=headers).get_json()
    assert stats["hosts_known"] == 5
    assert stats["found_by_source"] == {"links": 5}
    page = client.get("/").get_data(as_text=True)
    strip = page.split('id="found-by-source">', 1)[1].split("</ul>", 1)[0]
    assert "scripts" not in strip and '<span class="n">5</span>' in strip


def a_blocked_trap_and_a_shaky_root(db) -> None:
    """trap.test: 50 of 50 failed, then blocked; shaky.test: 45 of 50 failed, not blocked."""
    for name in ("trap", "shaky"):
        hosts = [f"s{i}.{name}.test" for i in range(50)]
        queue.save_hosts(db, hosts)
        ok = 5 if name == "shaky" else 0
        record_outcomes(db, [(n, "OK") for n in hosts[:ok]])
        record_outcomes(db, [(n, "DNS_NXDOMAIN") for n in hosts[ok:]])
        queue.finish_many(db, [Crawled(n, CrawlResult("DNS_NXDOMAIN")) for n in hosts[ok:]])
    deny_entries.upsert_blocked(db, "trap.test", "subdomain generator: 50 of 50 failed")


def test_a_blocked_root_reads_blocked_not_near_a_block(client, db):
    a_blocked_trap_and_a_shaky_root(db)
    page = client.get("/roots?sort=near_block").get_data(as_text=True)
    rows = {r.split("</a>")[0].rsplit(">", 1)[1]: r for r in page.split("<tr")[2:]}
    assert "near a block" not in rows["trap.test"] and "blocked" in rows["trap.test"]
    assert "near a block" in rows["shaky.test"]
    detail = client.get("/roots/trap.test").get_data(as_text=True)
    facts = detail.split('id="root-facts">', 1)[1].split("</dl>", 1)[0]
    assert "near a block" not in facts and '<strong class="flag">blocked</strong>' in facts
    headers = give_api_token(db, "alice", "r" * 32)
    api = client.get("/api/roots", headers=headers).get_json()["roots"]
    flags = {r["root"]: (r["near_block"], r["blocked"]) for r in api}
    assert flags["trap.test"] == (False, True) and flags["shaky.test"] == (True, False)
