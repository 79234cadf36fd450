"""Every request of a crawl carries the same callback objects: Scrapy remembers its check
of a callback's source (is it a generator returning a value?) under a weak reference to
the callback object, and a fresh bound method per request had it read the source again."""

from __future__ import annotations

import os

from scrapy.utils.misc import is_generator_with_return_value
from scrapy.utils.test import get_crawler

from crawler.core import config
from crawler.spiders.hosts import HostsSpider


def test_requests_share_one_callback_whose_check_scrapy_remembers(db, monkeypatch):
    settings = {s.name: value for s, value, _ in config.effective(os.environ)}
    crawler = get_crawler(HostsSpider, settings)
    spider = HostsSpider.from_crawler(crawler)
    crawler.spider = spider
    spider.setup()
    first, second = spider.host_request("a.test"), spider.host_request("b.test")
    assert first.callback is second.callback and first.errback is second.errback

    checked = []
    monkeypatch.setattr("inspect.getsource", lambda f: checked.append(f) or "def f(): pass")
    del first, second
    for name in ("c.test", "d.test", "e.test"):
        is_generator_with_return_value(spider.host_request(name).callback)
    assert len(checked) <= 1  # the first look at most, never one per request
