"""Issue 13, row 15 (and row 14): pages without repeated HTML ids, a favicon, the
preview in the panel's words, and what `/` shows after an entry is removed."""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser

import pytest

from crawler.db import entries
from tests.unit.test_panel_support import insert_hosts, post_form

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
    entries.add_no_follow(db, ["gone.test"], note="x")
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
