"""A page's names take one form from discovery to the database (docs/design.md, "A page's
names"): the links the filter made reach the stats, the item and the write as they are,
and what the database answers comes back to the pipeline, not onto the item."""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler
from sqlalchemy import text

from crawler.core import config
from crawler.core.links import FoundName
from crawler.db.crawl import claims, queue
from crawler.db.rules import deny_entries
from crawler.pipelines import HostWritePipeline
from crawler.spiders.hosts import DROPPED_PREFIX, HostsSpider
from tests.loops import run as run_in_loop
from tools import name_path

PAGE = "page.test"
BODY = """<a href="mailto:someone@page.test">mail</a> <a href="http://intranet/">one label</a>
<a href="http://x.comundefined/">no such TLD</a> <a href="http://printer.local/">special</a>
<a href="http://social.test/share">denied</a> <a href="https://www.social.test/">denied</a>
<a href="http://192.168.1.1/">private</a>
<a href="https://a.test/">kept</a> <script src="https://cdn.b.test/app.js"></script>"""
DROPPED = {
    "no_hostname": 1,
    "single_label": 1,
    "unknown_tld": 1,
    "special_use": 1,
    "no_follow": 2,
    "private_address": 1,
}


@pytest.fixture
def crawl(db):
    """The spider, set up as a crawl opens it, and the pipeline, on one crawler."""
    deny_entries.add_no_follow(db, ["social.test"])
    settings = {s.name: value for s, value, _ in config.effective(os.environ)}
    crawler = get_crawler(HostsSpider, settings)
    spider = HostsSpider.from_crawler(crawler)
    crawler.spider = spider
    spider.setup()
    spider.state.denylist.load()
    yield spider, HostWritePipeline.from_crawler(crawler)
    spider.state.denylist.stop()


def parsed(spider):
    request = spider.host_request(PAGE)
    response = HtmlResponse(request.url, body=BODY.encode(), request=request)
    [item] = spider.parse(response)
    return item


def test_the_dropped_counts_reach_the_stats_the_item_and_the_write_intact(db, crawl, monkeypatch):
    spider, pipeline = crawl
    queue.save_hosts(db, [PAGE])
    claims.claim(db, 1, "w1")
    handed = []
    finish_many = queue.finish_many
    monkeypatch.setattr(queue, "finish_many", lambda e, c: handed.extend(c) or finish_many(e, c))

    item = parsed(spider)
    stats = spider.crawler.stats.get_stats()
    assert item.links.dropped == DROPPED
    assert {k: v for k, v in stats.items() if k.startswith(DROPPED_PREFIX)} == {
        DROPPED_PREFIX + reason: n for reason, n in DROPPED.items()
    }
    assert item.links.by_entry == {"social.test": 2}
    before = dataclasses.asdict(item)
    assert run_in_loop(pipeline.process_item(item)) is item

    assert handed[0].links is item.links  # written as the spider made it
    assert dataclasses.asdict(item) == before  # nothing of the database's rides back on it
    assert spider.crawler.stats.get_value("hostcrawl/hosts/links_saved") == 2
    with db.connect() as conn:
        row = conn.execute(
            text("SELECT links_found, links_saved, links_filtered FROM hosts WHERE hostname = :h"),
            {"h": PAGE},
        ).one()
    assert tuple(row) == (9, 2, sum(DROPPED.values()))


def test_each_name_carries_its_root_and_the_place_and_group_it_was_first_seen_in(crawl):
    spider, _ = crawl
    assert parsed(spider).links.names == (
        FoundName("a.test", "a.test", "a href", "links"),
        FoundName("cdn.b.test", "b.test", "script src", "resources"),
    )


def test_a_found_names_root_and_group_are_worked_out_once_on_its_way_to_the_write(database_url, db):
    with ThreadPoolExecutor(1) as thread:  # its own event loop, off the main thread
        path = thread.submit(name_path.trace, database_url).result()
    assert path.written_at is not None
    assert path.asked["root"] == {"crawler.core.links": 1}
    assert path.asked["group"] == {"crawler.core.links": 1}
