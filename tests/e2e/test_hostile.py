"""Hostile pages from the open web: the crawl records an outcome for each and keeps going."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from tests.conftest import empty_tables
from tests.e2e.conftest import (
    HOSTILE_PEAK_RSS_MB,
    NAMES_CAP,
    CrawlerProcess,
    crawl_settings,
    most_names_saved,
    peak_rss_mb,
)
from tests.fakeweb import FakeWeb, World

LONG_HOST = ".".join(["a" * 60] * 8) + ".test"  # 500 characters
# Production settings (DOWNLOAD_MAXSIZE 2 MiB, crawler/addon.py): 130,000 links are a
# 1.9 MB page, read whole; 200,000 links are 3 MB, cut off and HTTP_TOO_LARGE.
MANY_LINKS = 130_000
TOO_MANY_LINKS = 200_000


def link_page(links: int) -> bytes:
    """A page of `links` links: relative ones, then three to other hosts (two new)."""
    many = "".join(f"<a href=/{i}>" for i in range(links - 3))
    many += '<a href="http://one.test/"><a href="http://two.test/"><a href="http://one.test/x">'
    return f"<html><title>{links} links</title>{many}".encode()


def hostile_world() -> World:
    world = World()
    bad = [
        "javascript:alert(1)",
        "data:text/html,<a href=http://data.test/>x</a>",
        "mailto:someone@mail.test",
        f"http://{LONG_HOST}/",
        "http://xn--zz.test/",  # punycode that does not decode
        "http://bücher.test/",  # IDN: saved as xn--bcher-kva.test
        "http://[::ffff:127.0.0.2]/",  # an IPv6 literal (IPv4-mapped loopback)
        "http://exa mple.test/",
        "http://" + "x" * 70 + ".test/",
    ]
    world.site("hub.test", links=[*bad, *(f"http://{h}/" for h in HOSTILE)])
    world.huge("huge.test", 50 * 1024 * 1024)
    world.raw("manylinks.test", link_page(MANY_LINKS))
    world.raw("toomanylinks.test", link_page(TOO_MANY_LINKS))
    world.raw("badutf8.test", b"<html><title>caf\xc3\x28 \xff\xfe</title><a href=http://ok1.test/>")
    world.raw(
        "mixed.test",
        b'<meta charset="shift_jis"><title>\x82\xa0 \xe9t\xe9</title><a href="http://ok2.test/">',
    )
    world.raw("binary.test", random.Random(1).randbytes(20_000) + b"\x00" * 100)
    world.redirect("loop.test", "http://loop.test:{http_port}/")
    for name in ("one.test", "two.test", "ok1.test", "ok2.test", "xn--bcher-kva.test"):
        world.site(name)
    return world


HOSTILE = {
    "huge.test": "HTTP_TOO_LARGE",
    "manylinks.test": "OK",
    "toomanylinks.test": "HTTP_TOO_LARGE",
    "badutf8.test": "OK",
    "mixed.test": "OK",
    "binary.test": "OK",
    "loop.test": "HTTP_REDIRECT_LOOP",
}


@pytest.fixture(scope="module")
def hostile_crawl(engine, tmp_path_factory):
    empty_tables(engine)
    db = engine
    logs = tmp_path_factory.mktemp("hostile")
    with FakeWeb(hostile_world(), workdir=logs / "web") as web:
        queue.seed(db, ["hub.test"])
        settings = crawl_settings(web, RETRY_TIMES=0)  # production DOWNLOAD_MAXSIZE
        worker = CrawlerProcess(settings, logs / "crawl.log")
        worker.wait()
    with engine.connect() as conn:
        sql = "SELECT hostname, outcome, title, links_found, extract_stopped FROM hosts"
        facts = {r.hostname: r for r in conn.execute(text(sql))}
    # Read now: another module's test may empty the tables before this module's last.
    return facts, worker.log(), most_names_saved(engine)


@pytest.mark.parametrize(("host", "outcome"), HOSTILE.items())
def test_each_hostile_page_gets_an_outcome(hostile_crawl, host, outcome):
    facts, _, _ = hostile_crawl
    assert facts[host].outcome == outcome


def test_the_crawl_stays_within_its_bounds(hostile_crawl):
    facts, log, most_saved = hostile_crawl
    assert most_saved <= NAMES_CAP
    assert peak_rss_mb(log) <= HOSTILE_PEAK_RSS_MB
    # 130,000 links (1.9 MB) are read whole, well within the reading budget: linear.
    assert facts["manylinks.test"].extract_stopped is None


def test_nothing_raises_out_of_the_spider(hostile_crawl):
    _, log, _ = hostile_crawl
    assert "Spider error" not in log and "spider_exceptions" not in log
    assert "Traceback" not in log


def test_bad_links_are_dropped_and_good_ones_kept(hostile_crawl):
    facts, _, _ = hostile_crawl
    assert "xn--bcher-kva.test" in facts and "::ffff:7f00:2" in facts
    assert not [h for h in facts if len(h) > 253 or "xn--zz" in h or " " in h]
    assert facts["hub.test"].links_found == 9 + len(HOSTILE)


def test_the_link_pages_are_either_side_of_the_production_size_limit():
    from crawler.addon import PRODUCTION_DEFAULTS

    limit = PRODUCTION_DEFAULTS["DOWNLOAD_MAXSIZE"]
    assert limit == 2 * 1024 * 1024
    assert len(link_page(MANY_LINKS)) < limit < len(link_page(TOO_MANY_LINKS))


def test_a_page_with_130000_links_is_read_whole(hostile_crawl):
    facts, _, _ = hostile_crawl
    assert facts["manylinks.test"].links_found == MANY_LINKS
    assert {"one.test", "two.test"} <= set(facts)


def test_broken_encodings_still_give_links_and_a_title(hostile_crawl):
    facts, _, _ = hostile_crawl
    assert "ok1.test" in facts and "ok2.test" in facts
    assert facts["badutf8.test"].title.startswith("caf")
