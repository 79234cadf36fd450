"""Before a block, and before a failure is believed: is it the world, or is it us?

Our own resolver or network going away makes every host fail. Two checks keep
that from blocking an innocent root (docs/design.md, rule 5) or settling a live host as
dead:

- `WorldCheck`: a few canary hosts (CANARY_HOSTS, or by default hosts that
  have ever answered OK in this database, newest first) are asked directly —
  a fresh DNS lookup, a connection, an HTTP status line. Only an answer
  proves the world answers us; until one does, failures are ours.
- `SelfCheck`: before a block is written, a canary of another root must
  answer now, and a sample of the window's names must still fail now.
  Otherwise the block is deferred (the window stays, the panel shows a
  banner) and looked at again later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from scrapy.utils.defer import deferred_to_future
from sqlalchemy import Engine

from crawler.core.outcomes import DNS_ALIVE, OK, is_network_failure
from crawler.db import canaries as canary_db
from crawler.db import windows
from crawler.db.retry import in_thread_until_up
from crawler.probes import front_page

log = logging.getLogger(__name__)

CANARIES = 3
NO_CANARY = "no host has answered yet in this database: no canary to prove the world answers us"


class WorldCheck:
    """Does the world answer us now? One check at a time, its answer kept a while.

    Proven only when a canary answers: no canary to ask (no host has ever
    answered in this database) is no proof, and neither is a canary that gets
    NXDOMAIN now (our resolver lies). Each change is logged once, with the
    hosts held back meanwhile, and an unproven spell is summed up every
    `summary_every` seconds (at the first check after): the log of an outage is
    a few lines, however many hosts fail in it. `on_change(unproven since or
    None, no canary at all, hosts held back)` hears every unproven check and
    the return (stats, the panel's banner).
    """

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
        summary_every: float = 60.0,
        on_change: Callable[[datetime | None, bool, int], None] = lambda *change: None,
    ) -> None:
        self.engine = engine
        self.resolver = resolver
        self.templates = templates
        self.canary_hosts = list(canary_hosts)
        self.timeout = timeout
        self.dns_only = dns_only
        self.on_change = on_change
        self.summary_every = summary_every
        # Unproven answers are kept briefly: the first host to answer should end them soon.
        self.keep = {True: keep_healthy, False: keep_unhealthy, None: keep_unhealthy}
        self.lookups = 0
        self.unproven_since: datetime | None = None
        self.last_seen_down = float("-inf")  # monotonic
        self.held: set[str] = set()  # hosts whose failure was ours, this unproven spell
        self.tries_held = 0  # failures held back this spell (a host may fail many times)
        self._summed_up = (0.0, 0)  # when the spell was last told (monotonic), tries then
        self._asking: set[str] = set()  # hosts whose failure waits for the verdict
        self._last: tuple[float, bool | None, str] | None = None
        self._running: dict[str, asyncio.Task] = {}

    async def answers(
        self, other_than: str = "", fresh: bool = False, newer_than: float = float("-inf")
    ) -> tuple[bool | None, str]:
        """(True, '') when a canary answers, (False, why) when none does, (None, why)
        when there is no canary to ask. `fresh`: ask now, whatever answer is kept.

        `newer_than` (monotonic): a failure that waited out a timeout began that long
        ago; a verdict from before then says nothing about it and is asked again.
        """
        now = time.monotonic()
        last = self._last
        kept = last is not None and now - last[0] < self.keep[last[1]] and last[0] >= newer_than
        if not fresh and kept:
            return last[1], last[2]
        running = self._running.get(other_than)
        if running is None or running.done():
            running = self._running[other_than] = asyncio.ensure_future(self._check(other_than))
            running.add_done_callback(self._forget)
        return await asyncio.shield(running)

    def _forget(self, done: asyncio.Task) -> None:
        """A finished check leaves the table of running ones (not its successor)."""
        for key, running in list(self._running.items()):
            if running is done:
                del self._running[key]

    async def proven(self) -> bool:
        return (await self.answers())[0] is True

    async def holds_back(self, hostname: str, edge: float, began: float = float("-inf")) -> str:
        """Why a failure of `hostname` below HTTP is ours, not the host's ('' when it is
        its own): the world is unproven now, or was in the last `edge` seconds (the
        request may have started then). `began`: when the failure's wait began
        (monotonic). A failure held back counts in the logs."""
        self._asking.add(hostname)
        try:
            answering, why = await self.answers(newer_than=began)
        finally:
            self._asking.discard(hostname)
        if answering is True and not self.down_within(edge):
            return ""
        self.held.add(hostname)
        self.tries_held += 1
        return why or "just after our resolver or network came back"

    async def _check(self, other_than: str) -> tuple[bool | None, str]:
        canaries = self.canary_hosts or await in_thread_until_up(
            "choosing canaries",
            canary_db.answered_hosts,
            self.engine,
            CANARIES,
            other_than,
            self.dns_only,
        )
        if not canaries:
            verdict: tuple[bool | None, str] = (None, NO_CANARY)
        else:
            asked = [self.ask(name) for name in canaries[:CANARIES]]
            outcomes = await asyncio.gather(*asked)
            if OK in outcomes:
                verdict = (True, "")
            else:
                said = ", ".join(f"{n} {o}" for n, o in zip(canaries, outcomes, strict=False))
                verdict = (False, f"resolver/network not answering (canaries: {said})")
        self._note(*verdict)
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
        """Whether the world was seen unproven in the last `seconds` (a request that
        started then may have failed for our outage, though it answers now)."""
        return time.monotonic() - self.last_seen_down <= seconds

    def _note(self, answering: bool | None, why: str) -> None:
        if answering is True:
            if self.unproven_since is not None:
                spell = (datetime.now(UTC) - self.unproven_since).total_seconds()
                log.warning(
                    "the world answers again after %.0f s: %d hosts were held back (tried"
                    " again, not settled); blocks resume",
                    spell,
                    len(self.held),
                )
                self.unproven_since = None
                self.on_change(None, False, len(self.held))
            return
        self.last_seen_down = now = time.monotonic()
        if self.unproven_since is None:
            self.unproven_since = datetime.now(UTC)
            self.held = set(self._asking)
            self.tries_held = 0
            self._summed_up = (now, 0)
            log.warning(
                "the world is not answering us (%s): blocks are held, and failures below"
                " HTTP are tried again, not settled; %d hosts held back",
                why,
                len(self.held),
            )
        elif now - self._summed_up[0] >= self.summary_every:
            self._sum_up(why, now)
        self.on_change(self.unproven_since, why == NO_CANARY, len(self.held))

    def _sum_up(self, why: str, now: float) -> None:
        """One line for the spell so far: how long, why, and what was held back."""
        told_at, tries_then = self._summed_up
        spell = (datetime.now(UTC) - self.unproven_since).total_seconds()
        log.warning(
            "the world has not answered us for %.0f s (%s): %d hosts held back so far,"
            " %d failures tried again in the last %.0f s; blocks are held",
            spell,
            why,
            len(self.held),
            self.tries_held - tries_then,
            now - told_at,
        )
        self._summed_up = (now, self.tries_held)


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
        # Proof at the moment of the block: a canary of another root answers now.
        answering, why = await self.world.answers(other_than=domain, fresh=True)
        if answering is not True:
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
