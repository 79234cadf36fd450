"""Retention on a schedule: each worker prunes every PRUNE_INTERVAL seconds (0 = off).

A Scrapy extension, installed by the add-on. The prune itself
(crawler/db/crawl/retention.py) runs in a thread, in short batches under a database
advisory lock: when another worker is pruning, this one skips its turn. The
first prune is one interval after the crawl opens, so a burst of short runs
(tests, `scrapy audit`) does not prune on every start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from scrapy import signals
from scrapy.exceptions import NotConfigured
from sqlalchemy.exc import DBAPIError

from crawler.db.crawl import retention
from crawler.db.server.engine import get_engine
from crawler.db.server.retry import first_line

log = logging.getLogger(__name__)


class ScheduledPrune:
    def __init__(self, crawler, interval: float, rules: retention.Rules) -> None:
        self.crawler = crawler
        self.interval = interval
        self.rules = rules
        self._task: asyncio.Task | None = None
        crawler.signals.connect(self.open, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        interval = settings.getint("PRUNE_INTERVAL")
        if interval <= 0:
            raise NotConfigured("PRUNE_INTERVAL is 0")
        return cls(crawler, interval, retention.Rules.from_values(settings.getint))

    def open(self, spider) -> None:
        self._task = asyncio.ensure_future(self.every_interval())

    async def close(self, spider) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def every_interval(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.prune_once()

    async def prune_once(self) -> retention.Pruned | None:
        """One scheduled prune, counted in the crawl's stats; an outage skips the turn."""
        try:
            pruned = await asyncio.to_thread(retention.scheduled, get_engine(), self.rules)
        except DBAPIError as exc:
            log.warning("retention: prune skipped (%s)", first_line(exc))
            return None
        stats = self.crawler.stats
        if pruned is None:
            stats.inc_value("hostcrawl/retention/busy")
            log.info("retention: another process is pruning; skipped")
            return None
        stats.inc_value("hostcrawl/retention/runs")
        stats.inc_value("hostcrawl/retention/deleted", pruned.total)
        if pruned.total:
            log.info("retention: pruned %s", pruned)
        return pruned
