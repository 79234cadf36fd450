"""Each worker's heartbeat in the crawl_workers table (crawler/db/crawl/heartbeats.py), for
the panel.

A Scrapy extension, installed by the add-on. When the spider opens it logs the worker's
start line (its name, pid and host: `make run`'s supervisor and an operator reading a
merged log tell the workers apart by it), then every HEARTBEAT seconds writes the
worker's row: pages settled so far, pages/s over the last beat, hosts in flight and
hosts an outage holds back (the dashboard's health row). The dashboard counts workers
with a fresh row as alive. When the spider closes the row is deleted; a killed worker's
row goes stale, then retention deletes it. A database outage skips a beat, never the
crawl.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from datetime import UTC, datetime

from scrapy import signals
from sqlalchemy.exc import DBAPIError

from crawler.db.crawl import heartbeats
from crawler.db.server.retry import first_line
from crawler.extensions.metrics import pages_settled
from crawler.shared import CrawlShared

log = logging.getLogger(__name__)

# Stats of the last beat, for the metrics: its write's time, and the hosts due then.
BEAT_MS = "hostcrawl/database/heartbeat_ms"
DUE_NOW = "hostcrawl/queue/due"


class Heartbeat:
    def __init__(self, crawler, every: float = heartbeats.HEARTBEAT) -> None:
        self.crawler = crawler
        self.every = every
        self.shared = CrawlShared.of(crawler)
        self.name = self.shared.worker
        # The queue's depth is for /metrics only: on a cluster its count asks every shard,
        # each heartbeat, of every worker.
        self.metrics_served = crawler.settings.getint("METRICS_PORT") > 0
        self.started_at = datetime.now(UTC)
        self._task: asyncio.Task | None = None
        self._last: tuple[float, int] | None = None  # (monotonic time, pages) of the last beat
        crawler.signals.connect(self.open, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def open(self, spider) -> None:
        log.info(
            "hostcrawl worker %s started (pid %d on %s)",
            self.name,
            os.getpid(),
            socket.gethostname(),
        )
        self._task = asyncio.ensure_future(self.every_beat())

    async def close(self, spider) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(DBAPIError):  # a stopped worker is not counted either way
            await asyncio.to_thread(heartbeats.leave, self.shared.engine, self.name)

    async def every_beat(self) -> None:
        while True:
            await self.beat_once()
            await asyncio.sleep(self.every)

    def figures(self) -> heartbeats.Beat:
        """This worker now: pages settled, pages/s since the last beat, in flight, held."""
        pages = pages_settled(self.crawler.stats.get_stats())
        now = time.monotonic()
        rate = 0.0
        if self._last is not None and now > self._last[0]:
            rate = (pages - self._last[1]) / (now - self._last[0])
        self._last = (now, pages)
        host, pid = socket.gethostname(), os.getpid()
        in_flight, held_back = len(self.shared.in_flight), self.shared.held_back()
        return heartbeats.Beat(
            self.name, host, pid, self.started_at, pages, rate, in_flight, held_back
        )

    async def beat_once(self) -> None:
        """Write the row, then (with METRICS_PORT) read the queue's depth: both for the
        metrics too (how long the database took to take a heartbeat, and the hosts due
        now)."""
        stats = self.crawler.stats
        try:
            started = time.perf_counter()
            await asyncio.to_thread(heartbeats.beat, self.shared.engine, self.figures())
            stats.set_value(BEAT_MS, 1000 * (time.perf_counter() - started))
            if self.metrics_served:
                stats.set_value(
                    DUE_NOW, await asyncio.to_thread(heartbeats.due_now, self.shared.engine)
                )
        except DBAPIError as exc:
            log.warning("heartbeat of %s skipped (%s)", self.name, first_line(exc))
