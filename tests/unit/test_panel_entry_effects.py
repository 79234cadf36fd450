"""What a deny entry did, on the panel: an emptied list says how many hosts entries hide
(with links), each entry counts the links it dropped, /roots counts only hosts that
exist, a blocked reason reads as a headline with its details, and the no_follow form
offers a pasted URL's registered domain and counts the new entries on its button."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime

from crawler.core.denylist import DenyList
from crawler.core.links import FilteredLinks, filter_links
from crawler.core.traps import Observation, describe, reason_parts
from crawler.db.crawl import queue
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import insert_hosts, post_form
from webpanel.queries import root_rows

pytest_plugins = ["tests.unit.test_panel_support"]

TRAP_HOSTS = [f"x{i}.trap.test" for i in range(52)]


def a_blocked_trap(db) -> str:
    """52 hosts that failed at DNS under trap.test, then trap.test blocked."""
    insert_hosts(db, TRAP_HOSTS, outcome="DNS_NXDOMAIN", last_crawled_at=datetime.now(UTC))
    insert_hosts(db, ["ok.keep.test"], outcome="OK", last_crawled_at=datetime.now(UTC))
    observed = [Observation(n, "DNS_NXDOMAIN", datetime.now(UTC)) for n in TRAP_HOSTS[:50]]
    reason = describe("trap.test", observed)
    assert deny_entries.upsert_blocked(db, "trap.test", reason)
    return reason


# -- an emptied list --------------------------------------------------------------------------


def test_a_list_emptied_by_entries_says_how_many_hosts_they_hide_with_links(client, db):
    a_blocked_trap(db)
    html = client.get("/?outcome=DNS_NXDOMAIN").get_data(as_text=True)
    assert "No hosts match." in html
    note = html.split('id="hidden-matches">', 1)[1].split("</p>", 1)[0]
    assert note.startswith("52 hosts that match are hidden by deny entries:")
    assert '<a class="hidden-entry" href="/blocked?q=trap.test">trap.test</a> (blocked, 52)' in note
    examples = re.findall(r'<a class="hidden-host" href="/hosts/([^"]+)">', note)
    assert len(examples) == 10 and set(examples) <= set(TRAP_HOSTS)
    assert client.get(f"/hosts/{examples[0]}").status_code == 200


def test_a_list_that_shows_hosts_or_matches_nothing_hidden_says_nothing_more(client, db):
    a_blocked_trap(db)
    shown = client.get("/?outcome=OK").get_data(as_text=True)
    assert "ok.keep.test" in shown and "hidden-matches" not in shown
    nothing = client.get("/?outcome=TCP_REFUSED").get_data(as_text=True)
    assert "No hosts match." in nothing and "hidden-matches" not in nothing


# -- links dropped per entry ------------------------------------------------------------------


def test_the_link_filter_counts_the_links_each_entry_dropped():
    denylist = DenyList([("social.test", "no_follow"), ("trap.test", "blocked")])
    hrefs = ["http://social.test/", "https://www.social.test/a", "http://www.social.test/b"]
    hrefs += ["http://a.trap.test/", "http://ok.test/", "http://localhost/"]
    links = filter_links(hrefs, "hub.test", denylist)
    assert links.by_entry == {"social.test": 3, "trap.test": 1}
    assert links.dropped["no_follow"] == 3 and links.dropped["blocked"] == 1
    merged = FilteredLinks(by_entry=Counter({"social.test": 2})).merged(links)
    assert merged.by_entry == {"social.test": 5, "trap.test": 1}


def test_each_no_follow_entry_shows_the_links_it_dropped(client, db):
    deny_entries.add_no_follow(db, ["social.test", "quiet.test"])
    insert_hosts(db, ["hub.test", "blog.test"])
    dropped = [Counter({"social.test": 20}), Counter({"social.test": 9})]
    queue.finish_many(
        db,
        [
            Crawled(name, CrawlResult("OK"), FilteredLinks(by_entry=by_entry))
            for name, by_entry in zip(["hub.test", "blog.test"], dropped, strict=True)
        ],
    )
    html = client.get("/no_follow").get_data(as_text=True)
    rows = dict(
        re.findall(r'class="host">([^<]+)</td>.*?data-label="links dropped">([^<]+)<', html, re.S)
    )
    assert rows == {"quiet.test": "0", "social.test": "29"}


# -- /roots counts hosts that exist -----------------------------------------------------------


def test_roots_count_only_hosts_that_exist(client, db):
    deny_entries.add_no_follow(db, ["never-seen.test", "www.seen.test"])
    insert_hosts(db, ["seen.test", "a.seen.test"])
    with db.connect() as conn:
        assert root_rows.root_line(conn, "never-seen.test").hosts == 0
        assert root_rows.root_line(conn, "seen.test").hosts == 2  # not its entry-only row
    html = client.get("/roots?sort=name").get_data(as_text=True)
    counts = dict(
        re.findall(r'roots/([^"]+)">[^<]+</a></td>\s*<td data-label="hosts">([^<]+)<', html)
    )
    assert counts == {"never-seen.test": "0", "seen.test": "2"}


# -- a blocked reason ---------------------------------------------------------------------------


def test_a_trap_reason_is_a_headline_with_its_details():
    at = datetime(2026, 12, 4, tzinfo=UTC)
    observed = [Observation(f"a{i}.t.test", "DNS_NXDOMAIN", at) for i in range(2)]
    observed.append(Observation("b.t.test", "TCP_TIMEOUT", at))
    headline, details = reason_parts(describe("t.test", observed))
    assert headline == "subdomain generator (DNS_NXDOMAIN 2, TCP_TIMEOUT 1)"
    assert details[0] == ("the last 3 unique subdomains of t.test all failed at DNS/TCP/TLS level")
    assert details[1].startswith("between 2026-12-04") and details[2].startswith("e.g. a0.t.test")
    assert reason_parts("hand-made") == ("hand-made", [])
    assert reason_parts("subdomain generator: 50 of 50 failed") == (
        "subdomain generator: 50 of 50 failed",
        [],
    )
    zone = "wildcard zone: hc-5e1f2a9b0c3d.farm.test resolves to 127.0.0.1, as any name would"
    assert reason_parts(zone) == (
        "wildcard zone",
        ["hc-5e1f2a9b0c3d.farm.test resolves to 127.0.0.1, as any name would"],
    )
    long_one, whole = reason_parts("word " * 60)
    assert len(long_one) <= 80 and long_one.endswith("…") and whole == ["word " * 59 + "word"]


def test_blocked_and_unblock_show_the_reason_as_a_headline_and_details(client, db):
    a_blocked_trap(db)
    for url in ("/blocked", "/blocked/trap.test/unblock"):
        html = client.get(url).get_data(as_text=True)
        headline = re.search(r'<p class="headline">([^<]+)</p>', html)[1]
        assert headline == "subdomain generator (DNS_NXDOMAIN 50)", url
        details = re.findall(r"<li>([^<]+)</li>", html.split('class="details"', 1)[1])
        assert details[0].endswith("of trap.test all failed at DNS/TCP/TLS level"), url
        assert details[2].startswith("e.g. "), url


# -- the no_follow form -----------------------------------------------------------------------


def test_a_pasted_url_offers_its_registered_domain_and_the_button_counts_new_entries(client, db):
    deny_entries.add_no_follow(db, ["social.test"])
    pasted = "https://WWW.Example-Shop.test/path\nsocial.test\nwww.blog.test\nshop.news.test"
    response = post_form(client, "/no_follow", {"entries": pasted, "preview": "Preview"})
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert 'value="Save 3 new entries (1 already there)"' in html
    beside = html.split('<div class="beside">', 1)[1].split("</div>", 1)[0]
    offers = re.findall(r'<a class="offer" href="([^"]+)">Use ([^ ]+) instead</a>', beside)
    assert [domain for _, domain in offers] == ["example-shop.test", "blog.test"]
    assert "<code>shop.news.test</code>" not in beside  # a subdomain named as such is meant
    again = client.get(offers[0][0].replace("&amp;", "&")).get_data(as_text=True)
    textarea = again.split("<textarea", 1)[1].split("</textarea>", 1)[0]
    assert textarea.split(">", 1)[1].split() == [
        "example-shop.test",
        "social.test",
        "www.blog.test",
        "shop.news.test",
    ]


def test_a_save_of_only_new_entries_keeps_its_plain_count(client, db):
    response = post_form(client, "/no_follow", {"entries": "a.test\nb.test", "preview": "Preview"})
    assert 'value="Save 2 entries"' in response.get_data(as_text=True)
