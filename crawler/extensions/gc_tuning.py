"""Fewer, cheaper garbage collections while a worker crawls.

Every page makes many short-lived objects (a request, its deferreds, a
response, a parsed tree), and CPython's default thresholds (700, 10, 10) ran
a young collection every 700 net allocations, each walking everything young
and, every hundred, everything the process holds. In bench/slowweb.py's
crawls the collector took 2.5-4 s of a worker's 17-25 s of CPU. When the
spider opens, what exists by then (modules, settings, the engine: it lives
as long as the process) is frozen out of the collector's sight, and young
collections run every YOUNG_EVERY allocations. Cyclic garbage is still
collected, in bigger and rarer rounds; the process's memory stays under
MEMORY_BUDGET_MB (crawler/extensions/in_flight.py watches it). At close the
collector is as it was.
"""

from __future__ import annotations

import gc

from scrapy import signals

YOUNG_EVERY = 20_000  # net allocations between young collections (CPython: 700)
OLDER_EVERY = 20  # collections of a generation between those of the next (CPython: 10)


class CollectorTuning:
    """A Scrapy extension: the collector tuned for the crawl, restored after it."""

    def __init__(self) -> None:
        self._before: tuple[int, int, int] | None = None

    @classmethod
    def from_crawler(cls, crawler) -> CollectorTuning:
        tuning = cls()
        crawler.signals.connect(tuning.open, signal=signals.spider_opened)
        crawler.signals.connect(tuning.close, signal=signals.spider_closed)
        return tuning

    def open(self, spider=None) -> None:
        self._before = gc.get_threshold()
        gc.collect()
        gc.freeze()
        gc.set_threshold(YOUNG_EVERY, OLDER_EVERY, OLDER_EVERY)

    def close(self, spider=None) -> None:
        if self._before is not None:
            gc.set_threshold(*self._before)
            gc.unfreeze()
            self._before = None
