"""The collector's tuning for a crawl (extensions/gc_tuning.py): set at open, undone at close."""

from __future__ import annotations

import gc

from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.addon import HostcrawlAddon
from crawler.extensions.gc_tuning import OLDER_EVERY, YOUNG_EVERY, CollectorTuning


def test_a_crawl_collects_rarely_and_leaves_the_collector_as_it_found_it():
    before = gc.get_threshold()
    tuning = CollectorTuning()
    tuning.open()
    try:
        assert gc.get_threshold() == (YOUNG_EVERY, OLDER_EVERY, OLDER_EVERY)
        assert gc.get_freeze_count() > 0  # what the process held at open is out of sight
    finally:
        tuning.close()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_the_add_on_installs_it():
    crawler = get_crawler(Spider, {"ADDONS": {HostcrawlAddon: 0}})
    crawler._apply_settings()
    assert CollectorTuning in crawler.settings.getwithbase("EXTENSIONS")
