"""The in-flight limit follows what the worker has to spare (crawler/extensions/in_flight.py)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.extensions.in_flight import (
    MIN_IN_FLIGHT,
    STALLED_AFTER,
    InFlightControl,
    averaged,
    next_limit,
    rss_bytes,
)
from crawler.shared import CrawlShared, InFlightRoom

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
    assert decide(lag=0.5, cpu=0.7) == (160, "cpu")  # busy, and others share the machine


def test_a_late_reactor_with_the_worker_mostly_idle_keeps_the_limit():
    """The machine's other processes hold the cores: fewer hosts would not help."""
    assert decide(lag=0.5, cpu=0.2) == (200, "")
    assert decide(lag=0.5, cpu=0.2, growing=True) == (200, "")  # nor raises


def test_while_doubling_a_reactor_busy_with_handshakes_does_not_stop_the_growth():
    """A slow web's first seconds are bursts of handshakes: the limit keeps doubling while
    the reactor is not late (under LAG_HIGH), and only after the first cut wants it prompt."""
    assert decide(lag=0.15, growing=True) == (400, "raise")
    assert decide(lag=0.15) == (200, "")


def test_a_busy_worker_that_keeps_time_keeps_its_limit():
    """Waiting on slow hosts, a worker works in bursts: busy is not CPU-bound."""
    assert decide(cpu=0.95) == (200, "")
    # Ramping up, a busy CPU does not hold the limit back: a late reactor would cut it.
    assert decide(cpu=0.95, growing=True) == (400, "raise")


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
    monkeypatch.setattr("crawler.extensions.in_flight.cpu_seconds", lambda: 0.0)  # an idle CPU
    # A small worker: the test process's own RSS (hundreds of MB late in a suite) would
    # be near the budget and hold the limit down.
    monkeypatch.setattr("crawler.extensions.in_flight.rss_bytes", lambda: 100 * MB)
    control = InFlightControl.from_crawler(crawler)
    assert CrawlShared.of(crawler) is control.shared  # the room it sets, the spider reads
    crawler.spider = Spider("probe")
    downloader = SimpleNamespace(total_concurrency=64)
    crawler._engine = SimpleNamespace(downloader=downloader)  # what the crawl sets
    control.open(crawler.spider)
    try:
        for _ in range(5):
            hold(control, dict.fromkeys(map(str, range(control.limit)), time.monotonic()))
            control.tick()
        assert control.limit == 300  # MAX_IN_FLIGHT
        assert control.shared.room == InFlightRoom(300, 300, growing=True)
        assert downloader.total_concurrency == 600  # robots.txt and page per host
        monkeypatch.setattr("crawler.extensions.in_flight.rss_bytes", lambda: 900 * MB)
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


def started_control(monkeypatch, cpu_per_tick=0.0, **settings):
    """An InFlightControl on a crawler with a spider and a downloader, as a crawl has, its
    CPU clock advancing `cpu_per_tick` seconds a call; (control, spider, downloader)."""
    crawler = get_crawler(Spider, {"MEMORY_BUDGET_MB": 500, **settings})
    used = iter(i * cpu_per_tick for i in range(10_000))
    monkeypatch.setattr("crawler.extensions.in_flight.cpu_seconds", lambda: next(used))
    monkeypatch.setattr("crawler.extensions.in_flight.rss_bytes", lambda: 100 * MB)
    control = InFlightControl.from_crawler(crawler)
    crawler.spider = Spider("probe")
    downloader = SimpleNamespace(total_concurrency=64)
    crawler._engine = SimpleNamespace(downloader=downloader)
    control.open(crawler.spider)
    return control, crawler.spider, downloader


def hold(control: InFlightControl, since: dict[str, float]) -> None:
    """The hosts in flight, as the spider keeps them in the crawl's shared state."""
    control.shared.in_flight.clear()
    control.shared.in_flight.update(since)


def test_one_tick_of_a_worker_with_time_to_spare_raises_the_limit_from_the_start(monkeypatch):
    """A slow web from the first second: a worker at 60% of a core, every host of its
    limit in flight, doubles at its first tick (the CPU average starts at CPU_SPARE)."""
    control, spider, downloader = started_control(monkeypatch)
    try:
        control._wall -= 0.5  # half a second of wall clock since the spider opened...
        control._cpu -= 0.3  # ...and 0.3 s of CPU in it: 60% of a core
        hold(control, dict.fromkeys(map(str, range(control.limit)), 0.0))
        start = control.limit
        control.tick()
        assert control.limit == 2 * start
    finally:
        control.close(spider)


def test_hosts_stalled_on_the_web_do_not_hold_room_under_the_limit(monkeypatch):
    """Hosts in flight for over STALLED_AFTER s (hanging, or their DNS silent) wait on the
    web: the worker may hold as many more (the downloader too), up to MAX_IN_FLIGHT."""
    control, spider, downloader = started_control(monkeypatch, MAX_IN_FLIGHT=1000)
    try:
        limit = control.limit
        now = time.monotonic()
        hung = {f"hung{i}": now - STALLED_AFTER - 1 for i in range(100)}
        hold(control, hung | {f"new{i}": now for i in range(limit - 100)})
        control.tick()
        assert control.stalled == 100
        assert control.allowed == control.limit + 100
        assert downloader.total_concurrency == 2 * control.allowed
        # The stalled count no more than as many again as the limit, nor past MAX_IN_FLIGHT.
        hold(control, {f"hung{i}": now - STALLED_AFTER - 1 for i in range(5000)})
        control.tick()
        assert control.allowed == min(1000, 2 * control.limit)
    finally:
        control.close(spider)
    assert control.crawler.stats.get_value("hostcrawl/in_flight/stalled_peak") == 5000


def test_after_a_cut_the_stalled_hosts_count_again(monkeypatch):
    """A CPU-bound worker's hosts wait on the worker: they are not given room beside it."""
    control, spider, downloader = started_control(monkeypatch, cpu_per_tick=10.0)
    try:
        control.lag = 1.0  # late, and the worker at a full core
        now = time.monotonic()
        hold(control, {f"h{i}": now - STALLED_AFTER - 1 for i in range(control.limit)})
        control.tick()
        assert control.allowed == control.limit
        assert downloader.total_concurrency == 2 * control.limit
    finally:
        control.close(spider)


def test_while_the_reactor_is_late_the_stalled_hosts_count(monkeypatch):
    """An idle worker with a late reactor (a starved process) is not cut, but its hosts
    in flight may be waiting on it: no room beside the limit for them."""
    control, spider, downloader = started_control(monkeypatch)
    try:
        control.lag = 1.0
        now = time.monotonic()
        hold(control, {f"h{i}": now - STALLED_AFTER - 1 for i in range(control.limit)})
        limit = control.limit
        control.tick()
        assert control.limit == limit  # not cut: the worker is mostly idle
        assert control.allowed == limit
    finally:
        control.close(spider)
