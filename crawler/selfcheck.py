"""Before a block, and before a failure is believed: is it the world, or is it us?

Our own resolver or network going away makes every host fail. Two checks keep
that from blocking an innocent root (DESIGN.md §5) or settling a live host as
dead:

- `WorldCheck`: a few canary hosts (CANARY_HOSTS, or by default hosts that
  answered OK in the last hour, of other roots first) are asked directly —
  a fresh DNS lookup, a connection, an HTTP status line. If none answers,
  the failures are ours.
- `SelfCheck`: before a block is written, the world must answer, and a sample
  of the window's names must still fail now. Otherwise the block is deferred
  (the window stays, the panel shows a banner) and looked at again later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from scrapy.utils.defer import deferred_to_future
from sqlalchemy import Engine

from crawler.core.outcomes import DNS_ALIVE, OK, is_network_failure
from crawler.db import windows
from crawler.db.retry import in_thread_until_up
from crawler.probes import front_page

log = logging.getLogger(__name__)

CANARIES = 3


class WorldCheck:
    """Does the world still answer us? One check at a time, its answer kept a while."""

    def __init__(
        self,
        engine: Engine,
        resolver: Callable[[], object],
        templates: list[str],
        canary_hosts: list[str] = (),
        timeout: float = 5.0,
        keep_healthy: float = 10.0,
        keep_unhealthy: float = 2.0,
        dns_only: bool = False,
    ) -> None:
        self.engine = engine
        self.resolver = resolver
        self.templates = templates
        self.canary_hosts = list(canary_hosts)
        self.timeout = timeout
        self.dns_only = dns_only
        self.keep = {True: keep_healthy, False: keep_unhealthy, None: keep_healthy}
        self.lookups = 0
        self.down_since: float | None = None
        self.last_seen_down = float("-inf")  # monotonic
        self._last: tuple[float, bool | None, str] | None = None
        self._running: asyncio.Task | None = None

    async def answers(
        self, other_than: str = "", newer_than: float = float("-inf")
    ) -> tuple[bool | None, str]:
        """(True, '') when a canary answers, (False, why) when none does, (None, why)
        when there is no canary to ask (a fresh crawl).

        `newer_than` (monotonic): a failure that waited out a timeout began that long
        ago; a verdict from before then says nothing about it and is asked again.
        """
        now = time.monotonic()
        last = self._last
        if last is not None and now - last[0] < self.keep[last[1]] and last[0] >= newer_than:
            return last[1], last[2]
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(self._check(other_than))
        return await asyncio.shield(self._running)

    async def _check(self, other_than: str) -> tuple[bool | None, str]:
        canaries = self.canary_hosts or await in_thread_until_up(
            "choosing canaries",
            windows.recent_ok_hosts,
            self.engine,
            CANARIES,
            other_than,
            self.dns_only,
        )
        if not canaries:
            verdict: tuple[bool | None, str] = (None, "no canary host answered lately")
        else:
            asked = [self.ask(name) for name in canaries[:CANARIES]]
            outcomes = await asyncio.gather(*asked)
            if OK in outcomes:
                verdict = (True, "")
            else:
                said = ", ".join(f"{n} {o}" for n, o in zip(canaries, outcomes, strict=False))
                verdict = (False, f"resolver/network not answering (canaries: {said})")
        self._note(verdict[0])
        self._last = (time.monotonic(), *verdict)
        return verdict

    async def ask(self, hostname: str) -> str:
        """The host's front page, asked directly now (OK when it answers); in `dns_only`
        mode (the audit) a fresh lookup, OK when it resolves."""
        self.lookups += 1
        if self.dns_only:
            resolution = await deferred_to_future(self.resolver().resolve(hostname, fresh=True))
            return OK if resolution.outcome == DNS_ALIVE else resolution.outcome
        return await front_page(self.resolver(), hostname, self.templates, self.timeout)

    def down_within(self, seconds: float) -> bool:
        """Whether the world was seen not answering in the last `seconds` (a request
        that started then may have failed for our outage, though it answers now)."""
        return time.monotonic() - self.last_seen_down <= seconds

    def _note(self, answering: bool | None) -> None:
        if answering is False:
            self.last_seen_down = time.monotonic()
        if answering is False and self.down_since is None:
            self.down_since = time.time()
            log.warning("the world is not answering us: our resolver or network is down?")
        elif answering and self.down_since is not None:
            log.warning("the world answers again after %.0f s", time.time() - self.down_since)
            self.down_since = None


class SelfCheck:
    """`confirm(root, reason)`: block now (True), or defer the block (False)."""

    def __init__(
        self,
        engine: Engine,
        world: WorldCheck,
        count: Callable[[str, int], None] = lambda key, n: None,
        sample: int = 3,
    ) -> None:
        self.engine = engine
        self.world = world
        self.count = count
        self.sample = sample

    async def confirm(self, domain: str, reason: str) -> bool:
        started, lookups = time.perf_counter(), self.world.lookups
        answering, why = await self.world.answers(other_than=domain)
        if answering is False:
            return await self._defer(domain, why)
        still_alive = await self._alive_in_sample(domain)
        if still_alive:
            return await self._defer(domain, still_alive)
        cost_ms = 1000 * (time.perf_counter() - started)
        asked = self.world.lookups - lookups
        log.info("self-check before blocking %s: %d look-ups, %.0f ms", domain, asked, cost_ms)
        self.count("hostcrawl/traps/selfcheck/lookups", asked)
        self.count("hostcrawl/traps/selfcheck/ms", round(cost_ms))
        return True

    async def _alive_in_sample(self, domain: str) -> str:
        """Why the window's failures are not real now ('' when a sample still fails)."""
        window = await in_thread_until_up("reading a window", windows.window, self.engine, domain)
        sample = window[: self.sample]
        now = await asyncio.gather(*(self.world.ask(o.hostname) for o in sample))
        for observed, outcome in zip(sample, now, strict=True):
            if not is_network_failure(outcome):
                return f"{observed.hostname} now gives {outcome} (was {observed.outcome})"
        return ""

    async def _defer(self, domain: str, why: str) -> bool:
        log.warning("block of %s deferred: %s", domain, why)
        self.count("hostcrawl/traps/deferred", 1)
        await in_thread_until_up("deferring a block", windows.defer_block, self.engine, domain, why)
        return False
