"""What the crawl's log says in an outage: a few true lines, however many hosts fail.

An outage is a line as it starts, a summary every LOGSTATS_INTERVAL and a line as it
ends; a host held back by it is dropped at DEBUG, by its reason alone.
"""

from __future__ import annotations

import logging
import time

import pytest
from scrapy import Spider
from scrapy.exceptions import DropItem
from scrapy.utils.log import logformatter_adapter
from scrapy.utils.test import get_crawler

from crawler.core.outcomes import DNS_TIMEOUT
from crawler.items import HostItem
from crawler.pipelines import HostWritePipeline
from crawler.rules.world_check import WorldCheck
from crawler.shared import CrawlShared
from tests.loops import run as run_in_loop
from tests.unit.test_world_check import run

HOSTS = 200


class SilentWorld(WorldCheck):
    """A world check whose canary says what `self.says` tells it (no network)."""

    def __init__(self, engine, summary_every: float) -> None:
        super().__init__(
            engine,
            resolver=lambda: None,
            templates=[],
            canary_hosts=["hub.test"],
            keep_healthy=0,
            keep_unhealthy=0,
            interval=0,
            summary_every=summary_every,
        )
        self.says = DNS_TIMEOUT

    async def ask(self, hostname: str, layer: str = "network") -> str:
        return self.says


async def sent_after_it(world: WorldCheck) -> str:
    """What holds_back says of a request sent after the outage ended."""
    return await world.holds_back("n0.down.test", started=time.monotonic())


def told(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]


def test_an_outage_is_a_line_as_it_starts_a_summary_and_a_line_as_it_ends(db, caplog):
    caplog.set_level(logging.DEBUG, logger="crawler.rules.world_check")

    async def outage(world: SilentWorld) -> None:
        for i in range(HOSTS):
            assert await world.holds_back(f"n{i % 50}.down.test", outcome=DNS_TIMEOUT)
        world.summary_every = 0  # the summary is due: the next check tells it
        assert await world.holds_back("n0.down.test")
        world.says = "OK"
        await world.recheck(set())  # the outage's watch hears it answer again
        assert await sent_after_it(world) == ""

    run(outage(SilentWorld(db, summary_every=3600)))

    lines = told(caplog)
    assert len(lines) == 3, lines
    started, summary, ended = lines
    # The failing layer first (the network's: a failure at DNS would ask by DNS), its
    # top error and the settings to check, then what the canaries said.
    assert started.startswith(
        "the world is not answering us (network: 1 of 1 connections failed in the last"
        " 3600 s, all DNS_TIMEOUT (this machine's network or firewall; CONNECT_TIMEOUT=10;"
        " CANARY_HOSTS=hub.test); resolver/network not answering (canaries: hub.test"
    )
    assert summary.startswith("the world has not answered us for 0 s (network: ")
    assert f"{HOSTS + 1} of {HOSTS + 1} connections failed in the last 3600 s," in summary
    assert f", {HOSTS} DNS_TIMEOUT (" in summary  # one failure came with no outcome named
    assert f"50 hosts held back so far, {HOSTS} failures tried again" in summary
    assert ended.startswith("the world answers again after 0 s: 50 hosts were held back")


@pytest.fixture
def crawler(db):
    crawler = get_crawler(Spider, {"ADDONS": {"crawler.addon.HostcrawlAddon": 0}})
    crawler.spider = crawler._create_spider("test")
    yield crawler
    CrawlShared.of(crawler).denylist.stop()


def test_a_host_held_back_by_an_outage_is_dropped_at_debug_by_its_reason(crawler, monkeypatch):
    pipeline = HostWritePipeline.from_crawler(crawler)

    async def unproven(hostname, began, layer, outcome, started):
        return "resolver/network not answering"

    async def held(hostname, outcome):
        return None

    monkeypatch.setattr(CrawlShared.of(crawler).world, "holds_back", unproven)
    monkeypatch.setattr(CrawlShared.of(crawler).held, "hold", held)
    item = HostItem("n1.down.test", DNS_TIMEOUT, final_url="http://n1.down.test/")
    with pytest.raises(DropItem) as dropped:
        run_in_loop(pipeline.process_item(item))

    entry = crawler.logformatter.dropped(item, dropped.value, None, crawler.spider)
    level, message, *args = logformatter_adapter(entry)
    assert level == logging.DEBUG
    logged = message % args[0] if args else message
    assert logged == (
        "Dropped: n1.down.test: DNS_TIMEOUT while resolver/network not answering;"
        " asked again once the world answers"
    )
