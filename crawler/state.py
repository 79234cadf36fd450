"""What a crawl's hostcrawl components share: the database, the deny list, the trap guard.

One per Scrapy crawler, made by whichever component asks first
(`CrawlState.of(crawler)`), so the middleware, the pipeline and any spider
see the same deny list and windows. The deny list is loaded in a thread when
the spider opens, before the first request.
"""

from __future__ import annotations

import asyncio
import os
import socket

from scrapy import signals

from crawler.db.engine import get_engine
from crawler.db.retry import in_thread_until_up
from crawler.hostnames import is_subdomain
from crawler.livedenylist import LiveDenyList
from crawler.trapguard import TrapGuard


class CrawlState:
    """The shared state of one crawler's hostcrawl components."""

    ATTRIBUTE = "_hostcrawl_state"

    @classmethod
    def of(cls, crawler) -> CrawlState:
        state = getattr(crawler, cls.ATTRIBUTE, None)
        if state is None:
            state = cls(crawler)
            setattr(crawler, cls.ATTRIBUTE, state)
        return state

    def __init__(self, crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.actor = f"crawler {self.worker}"
        self.engine = get_engine()
        self.denylist = LiveDenyList(self.engine, settings.getfloat("DENYLIST_RELOAD", 60))
        self.traps = TrapGuard(
            self.engine,
            settings.getint("TRAP_WINDOW", 50),
            self.actor,
            remember=self.denylist.remember,
        )
        self._background: set[asyncio.Task] = set()
        crawler.signals.connect(self.open, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    async def open(self, spider) -> None:
        """Load the deny list off the event loop, riding out an outage."""
        await in_thread_until_up("loading the deny list", self.denylist.load)

    def observe_soon(self, hostname: str, outcome: str) -> None:
        """Feed a subdomain's outcome to its root's window, without holding anyone up."""
        if is_subdomain(hostname):
            task = asyncio.ensure_future(self._observe(hostname, outcome))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _observe(self, hostname: str, outcome: str) -> None:
        if await self.traps.observe(hostname, outcome):
            self.crawler.stats.inc_value("traps/blocked")

    async def close(self, spider) -> None:
        """Let the last window writes (and blocks) land, then stop listening."""
        await asyncio.gather(*self._background, return_exceptions=True)
        self.denylist.stop()
