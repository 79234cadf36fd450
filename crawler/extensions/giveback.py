"""A worker gives back the memory a burst of big responses took.

A hostile response (a 2 MB page of registered domains, a robots.txt of 2 MB of
sitemaps, five redirect hops of 2 MB each) is read whole: its text, its parsed
tree and its links take tens of MB for a moment. Once read, that memory is
garbage, but it did not go back to the system, for three reasons:

- the name caches (functools.lru_cache of 65,536 names each, in
  crawler.core.suffixes, hostnames and urls) took one new entry per name of the
  flood, allocated between the burst's garbage: each pins the 1 MB arena of
  Python's allocator it sits in, which goes back to the system only when empty;
- with the collector tuned for the crawl (crawler/extensions/gc_tuning.py) the cycles a
  response leaves (its deferreds, a failure's traceback) wait for a rare full
  collection;
- glibc's malloc (lxml's trees, the body's bytes) keeps what is freed in its
  heaps for reuse.

After a burst a worker stayed at 237 MB instead of 118; over MEMORY_BUDGET_MB
that would hold its in-flight limit at its floor for the rest of its life
(crawler/extensions/in_flight.py). So every CHECK seconds a Scrapy extension (installed by
the add-on) looks at the worker's RSS. Once it is GROWTH over what it was after
the last give-back and no longer growing (the burst is over: trimming in its
middle gives back what the next response takes again), at most once every
MIN_GAP seconds, it gives memory back: the name caches emptied if a response
went over its caps or its reading budget since the last give-back (a flood's
names will not come again; the caches fill from the next pages), a full
collection, and glibc's `malloc_trim(0)` (through ctypes: it hands the free
pages inside the heaps back, not only the top of the main heap). It takes
milliseconds. Stats `hostcrawl/memory/given_back` (times, also a metric) and
`hostcrawl/memory/given_back_mb`; one INFO line each time.
"""

from __future__ import annotations

import logging
import time

from scrapy import signals

from crawler.extensions.in_flight import rss_bytes
from crawler.network.memory import give_back

log = logging.getLogger(__name__)

CHECK = 1.0  # seconds between looks at the RSS
GROWTH = 16 * 2**20  # bytes over the RSS after the last give-back that call for one
MIN_GAP = 5.0  # seconds between two give-backs at least
STILL = 2 * 2**20  # bytes of growth between two looks that still count as not growing
# Stats that count hostile responses: names over the caps, reading stopped by its budget.
FLOOD_STATS = ("hostcrawl/links/dropped/over_cap", "hostcrawl/extract/stopped/budget_spent")


def due(rss: int, last: int, settled: int, now: float, given: float) -> bool:
    """True when `rss` is GROWTH over `settled` (the RSS after the last give-back), no
    longer growing since the last look (`last`), and MIN_GAP has passed since `given`."""
    return rss - settled > GROWTH and rss - last < STILL and now - given >= MIN_GAP


class MemoryGiveBack:
    """Gives the memory of a burst back once it is over (a Scrapy extension)."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.settled = self.last = 0
        self.given = 0.0
        self.floods = 0  # FLOOD_STATS at the last give-back
        self._call = None
        crawler.signals.connect(self.open, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler) -> MemoryGiveBack:
        return cls(crawler)

    def open(self, spider=None) -> None:
        self.settled = self.last = rss_bytes()
        self.given = time.monotonic()
        self._schedule()

    def close(self, spider=None) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()

    def _schedule(self) -> None:
        from twisted.internet import reactor

        self._call = reactor.callLater(CHECK, self.check)

    def check(self) -> None:
        rss = rss_bytes()
        if due(rss, self.last, self.settled, time.monotonic(), self.given):
            rss = self.give_back(rss)
        # Memory that went back by itself lowers the mark the next burst is judged from.
        self.settled = min(self.settled, rss)
        self.last = rss
        self._schedule()

    def give_back(self, rss: int) -> int:
        """Give memory back and say so; the RSS after."""
        stats = self.crawler.stats
        floods = sum(stats.get_value(key, 0) for key in FLOOD_STATS)
        give_back(flooded=floods > self.floods)
        after = rss_bytes()
        self.settled, self.given, self.floods = after, time.monotonic(), floods
        stats.inc_value("hostcrawl/memory/given_back")
        stats.inc_value("hostcrawl/memory/given_back_mb", max(0, rss - after) // 2**20)
        log.info(
            "hostcrawl: gave %.0f MB back after a burst (RSS %.0f MB)",
            (rss - after) / 2**20,
            after / 2**20,
        )
        return after
