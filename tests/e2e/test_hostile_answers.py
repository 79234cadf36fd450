"""Odd answers are outcomes, told true: an unreadable DNS answer, a decompression bomb,
a robots.txt that hangs, a NUL in a link's host, a final URL of 10 KB."""

from __future__ import annotations

import gzip

import pytest
from sqlalchemy import text

from crawler.core.urls import MAX_STORED_URL
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

ORDINARY = [f"ok{i}.test" for i in range(4)]
LONG_QUERY = "q=" + "x" * 10_000
# host → its outcome
HOSTILE = {
    # A CNAME label of bytes that are no ASCII: twisted.names cannot read the answer.
    "oddcname.test": "DNS_ERROR",
    # 8 MiB of zeros gzipped to 8 KB, past the production DOWNLOAD_MAXSIZE (2 MiB): it
    # answered, too much (not IGNORED, the deny list's outcome).
    "bomb.test": "HTTP_TOO_LARGE",
    # robots.txt never answers: unreachable, so complete disallow (RFC 9309); the page
    # is not asked, and the host's final URL says whose robots.txt it was.
    "robotshang.test": "HTTP_ROBOTS_UNREACHABLE",
    "longurl.test": "OK",
}


def hostile_world() -> World:
    world = World()
    links = "".join(f'<a href="http://{h}/">' for h in [*ORDINARY, *HOSTILE])
    world.raw("hub.test", f'<title>hub</title>{links}<a href="http://a\0b.test/">'.encode())
    for name in [*ORDINARY, "ab.test"]:
        world.site(name)
    world.cname("oddcname.test", "bad\\255label.test")
    bomb = gzip.compress(b"\0" * (8 * 1024 * 1024))
    world.raw("bomb.test", bomb, headers={"Content-Encoding": "gzip"})
    world.site("robotshang.test")
    world.hang("robotshang.test", "/robots.txt")
    world.page("ok0.test", "/landing")
    world.redirect("longurl.test", f"http://ok0.test:{{http_port}}/landing?{LONG_QUERY}")
    return world


@pytest.fixture(scope="module")
def crawled(engine, tmp_path_factory):
    """One crawl for every test here (the web stays up for its request log)."""
    empty_tables(engine)
    logs = tmp_path_factory.mktemp("answers")
    with FakeWeb(hostile_world(), workdir=logs / "web") as web:
        queue.seed(engine, ["hub.test"])
        settings = crawl_settings(web, RETRY_TIMES=0, DOWNLOAD_MAXSIZE=2 * 1024 * 1024)
        worker = CrawlerProcess(settings, logs / "crawl.log")
        worker.wait()
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT hostname, outcome, final_url FROM hosts"))
            facts = {row.hostname: row for row in rows}
        # Read now: another module's test may empty the tables before this module's last.
        most_saved = most_names_saved(engine)
        yield web, facts, worker.log(), most_saved


def test_odd_answers_settle_their_hosts_with_the_true_outcome(crawled):
    web, facts, log, _ = crawled
    assert {name: facts[name].outcome for name in HOSTILE} == HOSTILE
    assert {name: facts[name].outcome for name in ORDINARY} == dict.fromkeys(ORDINARY, "OK")
    fetched = web.fetch_counts(path="/")
    assert all(fetched[name] == 1 for name in [*ORDINARY, "hub.test"])
    assert "Traceback" not in log and "CRITICAL" not in log and "UnicodeDecodeError" not in log


def test_the_crawl_stays_within_its_bounds(crawled):
    _, _, log, most_saved = crawled
    assert most_saved <= NAMES_CAP
    # A bomb of 8 MiB inflated is refused at DOWNLOAD_MAXSIZE (2 MiB), never held whole.
    assert peak_rss_mb(log) <= HOSTILE_PEAK_RSS_MB


def test_a_hanging_robots_txt_is_named_as_what_was_unreachable(crawled):
    web, facts, _, _ = crawled
    assert facts["robotshang.test"].final_url.endswith("/robots.txt")
    assert web.fetch_counts(path="/")["robotshang.test"] == 0


def test_a_nul_in_a_host_is_refused_not_dropped(crawled):
    _, facts, _, _ = crawled
    assert "ab.test" not in facts
    assert not [name for name in facts if "\0" in name or "\ufffd" in name]


def test_the_final_url_is_capped_as_the_title_is(crawled):
    _, facts, _, _ = crawled
    final = facts["longurl.test"].final_url
    assert final.startswith("http://ok0.test:") and len(final) == MAX_STORED_URL
