"""In flight sized by the machine: MAX_IN_FLIGHT's default from the memory budget and the
open-files limit (raised to the hard limit at start), and a ramp that reaches the hosts
due at once (crawler/core/in_flight_sizing.py, crawler/extensions/open_files.py)."""

from __future__ import annotations

import resource

from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.core.in_flight_sizing import BASE_MB, FEWEST, KB_PER_HOST_IN_FLIGHT, max_in_flight
from crawler.extensions.in_flight import next_limit
from crawler.extensions.open_files import raise_open_files_limit
from tests.unit.test_concurrency import hold, started_control

MB = 2**20


def test_the_default_maximum_is_what_the_memory_budget_holds():
    by_memory = int((500 * 0.8 - BASE_MB) * 1024 // KB_PER_HOST_IN_FLIGHT)
    assert max_in_flight(500, 1_000_000) == by_memory
    assert max_in_flight(2000, 1_000_000) > 4 * by_memory  # a bigger budget, more hosts
    assert max_in_flight(500, 1024) == (1024 - 256) // 2  # the open files run out first
    assert max_in_flight(50, 1_000_000) == FEWEST  # never under the control's floor


def test_the_worker_raises_its_open_files_limit_to_the_hard_limit(caplog):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, hard, 512)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        caplog.set_level("INFO")
        assert raise_open_files_limit() == hard
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
        if lowered < hard:
            assert f"open files limit raised from {lowered} to {hard}" in caplog.text
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_addon_sizes_max_in_flight_unless_it_is_given():
    sized = get_crawler(Spider, {"ADDONS": {"crawler.addon.HostcrawlAddon": 0}})
    open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert sized.settings.getint("MAX_IN_FLIGHT") == max_in_flight(500, open_files)
    given = {"ADDONS": {"crawler.addon.HostcrawlAddon": 0}, "MAX_IN_FLIGHT": 300}
    assert get_crawler(Spider, given).settings.getint("MAX_IN_FLIGHT") == 300


def test_while_growing_a_raise_goes_straight_to_the_hosts_due():
    def decide(due, growing=True):
        return next_limit(128, 128, 0.01, 0.3, 150 * MB, 500 * MB, growing, due)

    assert decide(due=2400) == (2400, "raise")
    assert decide(due=200) == (256, "raise")  # doubling, when that is more
    assert decide(due=2400, growing=False) == (161, "raise")  # after a cut, by a quarter


def test_within_a_tick_the_limit_reaches_the_hosts_due(monkeypatch):
    """2,400 hosts due, 128 in flight: the first tick with time to spare takes the limit to
    them (doubling from 128 took two seconds), within MAX_IN_FLIGHT."""
    control, spider, _ = started_control(monkeypatch, MAX_IN_FLIGHT=5000)
    try:
        assert control.shared.room.growing
        hold(control, dict.fromkeys(map(str, range(control.limit)), 1e12))
        control.shared.due = 2400
        control._wall -= 0.5
        control.tick()
        assert control.limit == 2400
        assert control.shared.room.limit == 2400
    finally:
        control.close(spider)
