"""Where and how each new host was first seen: written with the crawl's result, shown on
the host page and counted per source on the dashboard."""

from __future__ import annotations

from sqlalchemy import text

from crawler.core.links import FilteredLinks, FoundName
from crawler.core.sources import describe_place
from crawler.db.crawl import queue
from crawler.db.crawl.queue import Crawled, CrawlResult

pytest_plugins = ["tests.unit.test_panel_support"]


def crawl_page(db, page: str, via: dict[str, str]) -> list[str]:
    queue.save_hosts(db, [page])
    links = FilteredLinks.of(via)
    added = queue.finish_many(db, [Crawled(page, CrawlResult("OK", 200), links)])[0]
    return [name.hostname for name in added]


def found(db, hostname: str):
    with db.connect() as conn:
        sql = "SELECT discovered_from, found_source, found_via FROM hosts WHERE hostname = :h"
        return tuple(conn.execute(text(sql), {"h": hostname}).first())


def test_a_new_host_keeps_the_page_group_and_place_it_was_first_seen_in(db):
    added = crawl_page(db, "www.page.test", {"cdn.test": "script src", "x.test": "certificate"})
    assert sorted(added) == ["cdn.test", "x.test"]
    assert found(db, "cdn.test") == ("www.page.test", "resources", "script src")
    assert found(db, "x.test") == ("www.page.test", "certificate", "certificate")
    # Seen again elsewhere, otherwise: the first sighting stays.
    assert crawl_page(db, "other.test", {"cdn.test": "a href"}) == []
    assert found(db, "cdn.test") == ("www.page.test", "resources", "script src")


def test_the_finish_answers_with_the_new_names_as_the_page_carried_them(db):
    links = FilteredLinks.of({"cdn.test": "script src", "old.test": "a href"})
    queue.save_hosts(db, ["p.test", "old.test"])
    [added] = queue.finish_many(db, [Crawled("p.test", CrawlResult("OK", 200), links)])
    assert added == (FoundName("cdn.test", "cdn.test", "script src", "resources"),)
    assert added[0] is links.names[0]  # the page's own value: nothing rebuilt on the way


def test_a_long_place_is_stored_cut(db):
    crawl_page(db, "p.test", {"n.test": "div data-" + "x" * 100})
    assert found(db, "n.test")[2] == ("div data-" + "x" * 100)[:64]


def test_the_host_page_says_where_and_how_a_host_was_found(client, db):
    crawl_page(db, "www.example.test", {"cdn.test": "script src"})
    page = client.get("/hosts/cdn.test").get_data(as_text=True)
    assert "found on" in page and ">www.example.test</a>" in page
    assert "in <span" in page and "a &lt;script src&gt;" in page


def test_the_dashboard_counts_recent_hosts_by_source(client, db):
    crawl_page(db, "www.example.test", {"a.test": "a href", "b.test": "img src", "c.test": "cname"})
    page = client.get("/").get_data(as_text=True)
    listing = page.split('id="found-by-source"', 1)[1].split("</ul>", 1)[0]
    for source in ("links", "resources", "dns"):
        assert f"{source} <span" in listing


def test_places_read_as_words():
    assert describe_place("script src") == "a <script src>"
    assert describe_place("header Link") == "its Link header"
    assert describe_place("cname") == "its CNAME chain"
