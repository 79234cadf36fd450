"""A write of the pipeline that fails loses nothing: the host stays claimed by its worker
(no other worker takes it meanwhile) and is claimed again once its lease runs out."""

from __future__ import annotations

from datetime import timedelta

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler
from sqlalchemy import text

from crawler.core.links import FilteredLinks
from crawler.core.outcomes import OK
from crawler.db.crawl import claims, queue
from crawler.items import HostItem
from crawler.pipelines import HostWritePipeline
from crawler.shared import CrawlShared
from tests.loops import run as run_in_loop
from tests.waiting import wait_until

LEASE = timedelta(seconds=1)


@pytest.fixture
def pipeline(db):
    crawler = get_crawler(Spider, {"ADDONS": {"crawler.addon.HostcrawlAddon": 0}})
    crawler.spider = crawler._create_spider("test")
    yield HostWritePipeline.from_crawler(crawler)
    CrawlShared.of(crawler).denylist.stop()


def claim_row(db, hostname: str):
    with db.connect() as conn:
        return conn.execute(
            text("SELECT claimed_by, outcome FROM hosts WHERE hostname = :h"),
            {"h": hostname},
        ).one()


def test_a_failed_write_leaves_the_host_claimed_until_its_lease_runs_out(db, pipeline, monkeypatch):
    queue.save_hosts(db, ["page.test"])
    assert claims.claim(db, 1, "w1", LEASE) == ["page.test"]

    def disk_full(*args, **kwargs):
        raise RuntimeError("could not extend file: No space left on device")

    monkeypatch.setattr(queue, "finish_many", disk_full)
    links = FilteredLinks.of(["new.test"])
    item = HostItem("page.test", OK, 200, "http://page.test/", "Page", "http", links=links)
    with pytest.raises(RuntimeError, match="No space left"):
        run_in_loop(pipeline.process_item(item))

    assert claim_row(db, "page.test") == ("w1", None)  # still w1's, nothing written
    assert claims.claim(db, 10, "w2") == []  # nobody else takes it while the lease runs
    with db.connect() as conn:  # its links were not saved either
        assert conn.execute(text("SELECT hostname FROM hosts")).scalars().all() == ["page.test"]
    again = wait_until(lambda: claims.claim(db, 10, "w2"), what="the lease to run out")
    assert again == ["page.test"]
    assert claim_row(db, "page.test").claimed_by == "w2"
