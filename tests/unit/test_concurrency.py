"""The in-flight limit follows what the worker has to spare (crawler/concurrency.py)."""

from __future__ import annotations

from types import SimpleNamespace

from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.concurrency import MIN_IN_FLIGHT, InFlightControl, averaged, next_limit, rss_bytes

MB = 2**20
BUDGET = 500 * MB


def decide(limit=200, in_flight=200, lag=0.01, cpu=0.3, rss=150 * MB, growing=False):
    return next_limit(limit, in_flight, lag, cpu, rss, BUDGET, growing)


def test_a_worker_waiting_on_the_web_raises_its_limit():
    assert decide() == (251, "raise")
    assert decide(growing=True) == (400, "raise")  # doubling until the first cut


def test_a_limit_that_does_not_hold_the_worker_back_is_kept():
    assert decide(in_flight=50) == (200, "")


def test_a_cpu_bound_worker_lowers_its_limit():
    assert decide(lag=0.5, cpu=0.99) == (160, "cpu")  # pages wait, timeouts fire late
    assert decide(lag=0.5, cpu=0.2) == (160, "cpu")  # the machine's CPU is taken


def test_a_busy_worker_that_keeps_time_keeps_its_limit():
    """Waiting on slow hosts, a worker works in bursts: busy is not CPU-bound."""
    assert decide(cpu=0.95) == (200, "")
    assert decide(cpu=0.9, growing=True) == (200, "")


def test_one_burst_is_not_a_cpu_bound_worker_and_a_sustained_one_is():
    lag, cpu = averaged(0.0, 0.5), averaged(0.0, 1.0)  # a claim's handshakes, all at once
    assert decide(lag=lag, cpu=cpu)[1] == ""
    for _ in range(4):
        lag, cpu = averaged(lag, 0.5), averaged(cpu, 1.0)
    assert decide(lag=lag, cpu=cpu) == (160, "cpu")


def test_a_reactor_neither_prompt_nor_late_keeps_the_limit():
    assert decide(lag=0.15) == (200, "")


def test_memory_over_the_budget_lowers_the_limit_and_near_it_stops_raising():
    assert decide(rss=600 * MB) == (140, "memory")
    assert decide(rss=450 * MB) == (200, "")


def test_the_limit_stays_within_its_bounds(monkeypatch):
    crawler = get_crawler(Spider, {"MAX_IN_FLIGHT": 300, "MEMORY_BUDGET_MB": 500})
    monkeypatch.setattr("crawler.concurrency.cpu_seconds", lambda: 0.0)  # an idle CPU
    # A small worker: the test process's own RSS (hundreds of MB late in a suite) would
    # be near the budget and hold the limit down.
    monkeypatch.setattr("crawler.concurrency.rss_bytes", lambda: 100 * MB)
    control = InFlightControl.of(crawler)
    assert InFlightControl.of(crawler) is control
    crawler.spider = Spider("probe")
    downloader = SimpleNamespace(total_concurrency=64)
    crawler._engine = SimpleNamespace(downloader=downloader)  # what the crawl sets
    crawler.spider.in_flight = set(range(control.limit))
    control.open(crawler.spider)
    try:
        for _ in range(5):
            crawler.spider.in_flight = set(range(control.limit))
            control.tick()
        assert control.limit == 300  # MAX_IN_FLIGHT
        assert downloader.total_concurrency == 600  # robots.txt and page per host
        monkeypatch.setattr("crawler.concurrency.rss_bytes", lambda: 900 * MB)
        for _ in range(20):
            control.tick()
        assert control.limit == MIN_IN_FLIGHT
    finally:
        control.close(crawler.spider)
    stats = crawler.stats.get_stats()
    assert stats["hostcrawl/in_flight/limit"] == MIN_IN_FLIGHT
    assert stats["hostcrawl/in_flight/peak"] == 300
    assert stats["hostcrawl/rss_mb/peak"] == 900


def test_resident_memory_is_read():
    assert 10 * MB < rss_bytes() < 10_000 * MB
