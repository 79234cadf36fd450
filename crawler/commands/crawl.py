"""`scrapy crawl`: Scrapy's own, but a crawl closed for a failure exits 1.

Scrapy exits 0 whatever reason a spider closed with, once it started; a supervisor
(systemd, Docker's restart policy) then takes a worker whose claim kept failing for
one that drained. A crawl closed with a reason of FAILURES exits 1: the
spider's CLAIM_FAILED, and Scrapy's own for a start() that raised.
"""

from __future__ import annotations

from scrapy import signals
from scrapy.commands import crawl

from crawler.spiders.hosts import CLAIM_FAILED

FAILURES = frozenset({CLAIM_FAILED, "start_error"})


class Command(crawl.Command):
    def _create_crawler(self, spidercls):
        crawler = super()._create_crawler(spidercls)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)
        return crawler

    def _closed(self, spider, reason: str) -> None:
        if reason in FAILURES:
            self.exitcode = 1
