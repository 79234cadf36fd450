"""A worker gives back the memory of a burst once it is over (crawler/extensions/giveback.py)."""

from __future__ import annotations

import logging

from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.core import suffixes, urls
from crawler.extensions import giveback
from crawler.extensions.giveback import GROWTH, MIN_GAP, STILL, MemoryGiveBack, due
from crawler.network import memory

MB = 2**20
SETTLED = 120 * MB


def test_a_give_back_waits_for_the_growth_to_stop_and_for_its_gap():
    over = SETTLED + GROWTH + MB
    assert due(over, last=over, settled=SETTLED, now=MIN_GAP, given=0)
    assert not due(over, last=over - STILL, settled=SETTLED, now=MIN_GAP, given=0), "growing"
    assert not due(over, last=over, settled=SETTLED, now=MIN_GAP - 1, given=0), "too soon"
    small = SETTLED + GROWTH - MB
    assert not due(small, last=small, settled=SETTLED, now=MIN_GAP, given=0), "small growth"


def test_the_name_caches_are_emptied_after_a_flood_only():
    suffixes.root("www.example.co.uk")
    urls._link_host("www.example.co.uk")
    memory.give_back(flooded=False)
    assert suffixes.root.cache_info().currsize > 0
    memory.give_back(flooded=True)
    assert suffixes.root.cache_info().currsize == 0
    assert urls._link_host.cache_info().currsize == 0


def test_glibc_s_malloc_trim_is_found():
    assert memory.MALLOC_TRIM is not None  # the tests run on glibc (Debian)


def test_a_burst_over_and_given_back_is_counted_and_said(monkeypatch, caplog):
    crawler = get_crawler(Spider, {})
    rss = iter([300 * MB, 300 * MB, 200 * MB, 200 * MB])
    monkeypatch.setattr(giveback, "rss_bytes", lambda: next(rss))
    emptied = []
    monkeypatch.setattr(memory, "clear_name_caches", lambda: emptied.append(True))
    extension = MemoryGiveBack(crawler)
    extension.settled = extension.last = 150 * MB
    extension.given = float("-inf")  # no give-back yet
    extension._schedule = lambda: None
    crawler.stats.set_value("hostcrawl/links/dropped/over_cap", 540)
    caplog.set_level(logging.INFO, logger="crawler.extensions.giveback")

    extension.check()  # 300 MB, grown since the last look: the burst is not over
    extension.check()  # 300 MB again: over, given back down to 200 MB
    extension.check()  # 200 MB: nothing more to give

    assert crawler.stats.get_value("hostcrawl/memory/given_back") == 1
    assert crawler.stats.get_value("hostcrawl/memory/given_back_mb") == 100
    assert emptied == [True], "a response went over its caps: the name caches were emptied"
    assert extension.settled == 200 * MB
    said = [r.getMessage() for r in caplog.records]
    assert said == ["hostcrawl: gave 100 MB back after a burst (RSS 200 MB)"]


def test_the_add_on_installs_it():
    from crawler.addon import HostcrawlAddon

    crawler = get_crawler(Spider, {"ADDONS": {HostcrawlAddon: 0}})
    crawler._apply_settings()
    assert MemoryGiveBack in crawler.settings.getwithbase("EXTENSIONS")
