"""The panel's layout: pages without repeated HTML ids, a favicon, the
preview in the panel's words, and what `/` shows after an entry is removed."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

import pytest

from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import give_api_token, insert_hosts, post_form, shown_hosts

pytest_plugins = ["tests.unit.test_panel_support"]


class IdCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: Counter[str] = Counter()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids[value] += 1


def repeated_ids(html: str) -> list[str]:
    collector = IdCollector()
    collector.feed(html)
    return [name for name, n in collector.ids.items() if n > 1]


@pytest.mark.parametrize(
    "url", ["/", "/no_follow", "/no_follow/import", "/blocked", "/audit", "/hosts/a.test"]
)
def test_no_page_repeats_an_html_id(client, db, url):
    insert_hosts(db, ["a.test"])
    deny_entries.add_no_follow(db, ["gone.test"], note="x")
    response = client.get(url)
    assert response.status_code == 200
    assert repeated_ids(response.get_data(as_text=True)) == []


def test_the_no_follow_preview_repeats_no_id_either(client, db):
    page = post_form(client, "/no_follow", {"entries": "a.test\ncom", "preview": "Preview"})
    assert page.status_code == 200 and "Preview" in page.get_data(as_text=True)
    assert repeated_ids(page.get_data(as_text=True)) == []


def test_the_login_page_repeats_no_id(anonymous):
    assert repeated_ids(anonymous.get("/login").get_data(as_text=True)) == []


def test_there_is_a_favicon(anonymous, client):
    icon = anonymous.get("/favicon.ico")
    assert icon.status_code == 301 and icon.location.endswith("/static/favicon.svg")
    svg = anonymous.get("/static/favicon.svg")
    assert svg.status_code == 200 and svg.mimetype == "image/svg+xml"
    assert b"<svg" in svg.data
    assert 'rel="icon" href="/static/favicon.svg"' in client.get("/").get_data(as_text=True)


def test_the_preview_speaks_the_panels_words_not_the_clis(client, db):
    page = post_form(client, "/no_follow", {"entries": "a.test\ncom", "preview": "Preview"})
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and 'id="preview-panel"' in html
    assert "force to store it" not in html
    assert "tick “Store bare public suffixes” to store it" in html
    assert "Store bare public suffixes" in html  # the box it names is on the page


# -- row 14: what `/` shows after an entry is removed ------------------------------------------


@pytest.mark.parametrize("rule", ["no_follow", "blocked"])
def test_a_removed_entrys_own_row_does_not_show_as_a_never_scheduled_host(client, db, rule):
    insert_hosts(db, ["www.giant.test", "seen.test"])
    for name in ("giant.test", "seen.test"):  # one made for the entry, one a known host
        if rule == "no_follow":
            deny_entries.add_no_follow(db, [name])
        else:
            deny_entries.upsert_blocked(db, name, "a trap")
    for name in ("giant.test", "seen.test"):
        if rule == "no_follow":
            deny_entries.remove_no_follow(db, [name])
        else:
            deny_entries.unblock(db, [name])
    assert shown_hosts(client.get("/").get_data(as_text=True)) == ["seen.test", "www.giant.test"]
    assert client.get("/hosts/giant.test").status_code == 404  # the row went with its entry
    page = client.get("/hosts/seen.test").get_data(as_text=True)
    assert "not scheduled" not in page and "never (" not in page  # still due, as before


@pytest.mark.parametrize("rule", ["no_follow", "blocked"])
def test_hosts_known_counts_neither_deny_entries_nor_hosts_under_them(client, db, rule):
    insert_hosts(db, ["a.test", "b.test", "www.big.test"])
    if rule == "no_follow":
        deny_entries.add_no_follow(db, ["big.test", "other.test"])
    else:
        deny_entries.upsert_blocked(db, "big.test", "a trap")
        deny_entries.upsert_blocked(db, "other.test", "a trap")
    html = client.get("/").get_data(as_text=True)
    known = re.search(r'<dd id="stat-hosts">([^<]+)</dd>', html).group(1)
    assert known == "2"  # a.test, b.test: not the two entries, nor www.big.test under one
    assert shown_hosts(html) == ["a.test", "b.test"]
    stats = client.get("/api/stats", headers=give_api_token(db, "alice", "t")).json
    assert stats["hosts_known"] == 2
    assert stats["outcomes"] == {"none": 2}  # the entries are not "not crawled yet" hosts


def test_the_demos_hint_finds_the_demos_hosts(client, db):
    from tests.fakeweb.demo import ROOTS, panel_hint

    insert_hosts(db, [ROOTS[0], f"www.{ROOTS[0]}", f"shop.{ROOTS[0]}", "other.test"])
    hint = panel_hint("127.0.0.1:8000")
    search = re.search(r"http://127\.0\.0\.1:8000(/\?\S+)", hint).group(1)
    shown = shown_hosts(client.get(search).get_data(as_text=True))
    assert shown == sorted([ROOTS[0], f"shop.{ROOTS[0]}", f"www.{ROOTS[0]}"])
    assert "(search .test)" not in hint
