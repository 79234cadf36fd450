"""A worker over MEMORY_BUDGET_MB says so: by how much, whether lowering its hosts in
flight can still keep the budget, and what it holds."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.extensions.in_flight import MIN_IN_FLIGHT, InFlightControl

MB = 2**20


def test_a_worker_over_its_memory_budget_says_by_how_much_and_what_it_holds(monkeypatch, caplog):
    crawler = get_crawler(
        Spider, {"MAX_IN_FLIGHT": 300, "MEMORY_BUDGET_MB": 500, "LOGSTATS_INTERVAL": 0}
    )
    monkeypatch.setattr("crawler.extensions.in_flight.cpu_seconds", lambda: 0.0)
    monkeypatch.setattr("crawler.extensions.in_flight.rss_bytes", lambda: 536 * MB)
    control = InFlightControl.from_crawler(crawler)
    crawler.spider = Spider("probe")
    control.shared.in_flight.update(dict.fromkeys(map(str, range(MIN_IN_FLIGHT)), time.monotonic()))
    downloader = SimpleNamespace(total_concurrency=64, active=set(range(100)))
    crawler._engine = SimpleNamespace(downloader=downloader)
    caplog.set_level(logging.INFO, logger="crawler.extensions.in_flight")
    control.open(crawler.spider)
    try:
        for _ in range(10):
            control.tick()  # the limit falls to its floor, the memory stays
    finally:
        control.close(crawler.spider)

    over = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert over, [r.getMessage() for r in caplog.records]
    assert over[0].startswith(
        "hostcrawl: RSS 536 MB is over MEMORY_BUDGET_MB (500 MB) by 36 MB;"
        " its limit of hosts in flight is cut to"
    )
    assert over[-1].startswith(
        "hostcrawl: RSS 536 MB is over MEMORY_BUDGET_MB (500 MB) by 36 MB;"
        f" its limit of hosts in flight is at its floor ({MIN_IN_FLIGHT}): the rest is"
        " not the hosts in flight"
    )
    holds = f"it holds: hosts in flight {MIN_IN_FLIGHT}, requests in the downloader 100"
    assert holds in over[-1]
