"""Before a block: is a root's window of failures the root's own, or our outage?

`SelfCheck`: before a block is written, another root must answer us after the proof
came (asked afresh: the world check's canaries, never an answer from before), and a
sample of the window's names must still fail now. Otherwise the block is deferred (the
window stays, the panel shows a banner) and looked at again later. With no canary (no
host has answered yet in this database) there is no proof, and the block waits.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from sqlalchemy import Engine

from crawler.core.outcomes import is_network_failure
from crawler.core.words import counted
from crawler.db.rules import trap_windows
from crawler.db.server.retry import in_thread_until_up
from crawler.rules.evidence import DNS, NETWORK, failure_layer
from crawler.rules.world_check import WorldCheck

log = logging.getLogger(__name__)


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
        window = await in_thread_until_up(
            "reading a window", trap_windows.window, self.engine, domain
        )
        layers = {failure_layer(observed.outcome) for observed in window}
        layer = DNS if layers == {DNS} else NETWORK
        # Proof at the moment of the block: another root answers us after it came.
        moment = time.monotonic()
        answering, why = await self.world.answers(domain, newer_than=moment, layer=layer)
        if answering is not True:
            return await self._defer(domain, why)
        still_alive = await self._alive_in_sample(window)
        if still_alive:
            return await self._defer(domain, still_alive)
        cost_ms = 1000 * (time.perf_counter() - started)
        asked = self.world.lookups - lookups
        looked_up = counted(asked, "look-up")
        log.info("self-check before blocking %s: %s, %.0f ms", domain, looked_up, cost_ms)
        self.count("hostcrawl/traps/selfcheck/lookups", asked)
        self.count("hostcrawl/traps/selfcheck/ms", round(cost_ms))
        return True

    async def _alive_in_sample(self, window: list) -> str:
        """Why the window's failures are not real now ('' when a sample still fails):
        each name asked again at the layer it failed at (a lookup for a DNS failure)."""
        sample = window[: self.sample]
        asked = (self.world.ask(o.hostname, failure_layer(o.outcome)) for o in sample)
        now = await asyncio.gather(*asked)
        for observed, outcome in zip(sample, now, strict=True):
            if not is_network_failure(outcome):
                return f"{observed.hostname} now gives {outcome} (was {observed.outcome})"
        return ""

    async def _defer(self, domain: str, why: str) -> bool:
        log.warning("block of %s deferred: %s", domain, why)
        self.count("hostcrawl/traps/deferred", 1)
        await in_thread_until_up(
            "deferring a block", trap_windows.defer_block, self.engine, domain, why
        )
        return False
