"""Before a block, and before a failure is believed: is it the world, or is it us?

Our own resolver or network going away makes every host fail. Two checks keep
that from blocking an innocent root (docs/design.md, rule 5) or settling a live host as
dead:

- `WorldCheck`: the crawl's own answers first (another root answered us
  after the failure began: `crawler.rules.evidence`), and only when the crawl has
  said nothing since, a few canary hosts (CANARY_HOSTS, or by default hosts
  that have ever answered OK in this database, newest first) asked directly,
  each at most once a CANARY_INTERVAL — a fresh DNS lookup for a DNS failure,
  else an HTTP status line. Only an answer proves the world answers us; until
  one does, failures are ours.
- `SelfCheck`: before a block is written, another root must answer us after
  the proof came, and a sample of the window's names must still fail now.
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

from crawler.core.hostnames import root
from crawler.core.outages import FailureTally, LayerFailures, settings_to_check, why_silent
from crawler.core.outcomes import DNS_ALIVE, OK, is_network_failure
from crawler.core.words import counted
from crawler.db.rules import canaries as canary_db
from crawler.db.rules import trap_windows
from crawler.db.server.retry import in_thread_until_up
from crawler.network.probes import front_page
from crawler.rules.evidence import DNS, NETWORK, Evidence, failure_layer

log = logging.getLogger(__name__)

CANARIES = 3
# Canaries chosen per check: the recently contacted ones are passed over.
CANDIDATES = 4
NO_CANARY = "no host has answered yet in this database: no canary to prove the world answers us"


class WorldCheck:
    """Does the world answer us now? Heard from the crawl first, a canary asked last.

    A failure is the host's own when another root answered us at its layer after the
    failure began (`crawler.rules.evidence`): a busy crawl proves itself without a probe.
    Only when the crawl has said nothing since is a canary asked, and never a host
    contacted (by the crawl or a check) in the last `interval` seconds: one check
    answers every failure waiting for it, and a canary hears from us at most once an
    interval, with our User-Agent. Proven only when a canary answers: no canary to ask
    (no host has ever answered in this database) is no proof, and neither is a canary
    that gets NXDOMAIN now (our resolver lies). Each change is logged once, with the
    hosts held back meanwhile, and an unproven spell is summed up every
    `summary_every` seconds: the log of an outage is a few lines. `on_change(unproven
    since or None, no canary at all, hosts held back)` hears every unproven check and
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
        interval: float = 10.0,
        user_agent: str = "",
        nameservers: str = "",
        connect_timeout: float = 10.0,
    ) -> None:
        self.engine = engine
        self.resolver = resolver
        self.templates = templates
        self.canary_hosts = list(canary_hosts)
        self.timeout = timeout
        self.dns_only = dns_only
        self.on_change = on_change
        self.summary_every = summary_every
        self.interval = interval
        self.user_agent = user_agent
        self.nameservers = nameservers
        self.connect_timeout = connect_timeout
        self.evidence = Evidence()
        # The crawl's tries by layer over the summary's span: which layer fails, and how.
        self.tally = FailureTally(summary_every)
        # Unproven answers are kept briefly: the first host to answer should end them soon.
        self.keep = {True: keep_healthy, False: keep_unhealthy, None: keep_unhealthy}
        self.lookups = 0
        self.unproven_since: datetime | None = None
        self.last_seen_down = float("-inf")  # monotonic
        self.held: set[str] = set()  # hosts whose failure was ours, this unproven spell
        self.tries_held = 0  # failures held back this spell (a host may fail many times)
        self._summed_up = (0.0, 0)  # when the spell was last told (monotonic), tries then
        self._why = ""  # why the world is unproven, as the last check said
        self._asking: set[str] = set()  # hosts whose failure waits for the verdict
        self._last: dict[str, tuple[float, bool | None, str]] = {}  # by layer
        self._running: dict[tuple[str, str], asyncio.Task] = {}
        self._chosen: dict[str, tuple[float, list[str]]] = {}  # canaries by other_than

    def heard(self, hostname: str, layer: str = NETWORK) -> None:
        """`hostname` answered us now (a page: NETWORK; a name resolved: DNS). A page
        that answers ends an unproven spell: the world answers us again."""
        self.evidence.heard(hostname, layer)
        self.tally.answered(layer, time.monotonic())
        if layer == NETWORK and self.unproven_since is not None:
            self._note(True, "")

    async def answers(
        self, other_than: str = "", newer_than: float = float("-inf"), layer: str = NETWORK
    ) -> tuple[bool | None, str]:
        """(True, '') when a root other than `other_than` answered at `layer` at or
        after `newer_than` (monotonic), (False, why) when no canary does, (None, why)
        when there is no canary to ask.

        A failure that waited out a timeout began that long ago: an answer from before
        then says nothing about it. An unproven verdict is kept a while whatever its
        age: holding a failure back is the safe side.
        """
        layer = self._layer(layer)
        while True:
            if self.evidence.answered_since(layer, newer_than, other_than):
                return True, ""
            kept = self._kept(layer, newer_than)
            if kept is not None:
                return kept
            running = self._running.get((layer, other_than))
            if running is not None and not running.done():
                verdict = await asyncio.shield(running)
                if verdict[0] is not True or self._last[layer][0] >= newer_than:
                    return verdict
                continue
            wait = await self._until_a_canary_may_be_asked(layer, other_than)
            if wait <= 0:
                return await self._shared_check(layer, other_than)
            await self.evidence.news(wait)

    def _layer(self, layer: str) -> str:
        return DNS if self.dns_only else layer

    def _kept(self, layer: str, newer_than: float) -> tuple[bool | None, str] | None:
        last = self._last.get(layer)
        if last is None or time.monotonic() - last[0] >= self.keep[last[1]]:
            return None
        if last[1] is True and last[0] < newer_than:
            return None
        return last[1], last[2]

    async def _shared_check(self, layer: str, other_than: str) -> tuple[bool | None, str]:
        """One check at a time per question: every failure waiting shares its answer."""
        key = (layer, other_than)
        running = self._running.get(key)
        if running is None or running.done():
            running = self._running[key] = asyncio.ensure_future(self._check(layer, other_than))
            running.add_done_callback(self._forget)
        return await asyncio.shield(running)

    def _forget(self, done: asyncio.Task) -> None:
        """A finished check leaves the table of running ones (not its successor)."""
        for key, running in list(self._running.items()):
            if running is done:
                del self._running[key]

    async def proven(self) -> bool:
        return (await self.answers())[0] is True

    async def holds_back(
        self,
        hostname: str,
        edge: float,
        began: float = float("-inf"),
        layer: str = NETWORK,
        outcome: str = "",
    ) -> str:
        """Why a failure of `hostname` below HTTP is ours, not the host's ('' when it is
        its own): the world is unproven now, or was in the last `edge` seconds (the
        request may have started then). `began`: when the failure's wait began
        (monotonic); `layer`: the layer it failed at; `outcome`: its kind, tallied for
        the outage's reason. A failure held back counts in the logs."""
        self.tally.failed(layer, outcome or "unnamed", time.monotonic())
        self._asking.add(hostname)
        try:
            answering, why = await self.answers(newer_than=began, layer=layer)
        finally:
            self._asking.discard(hostname)
        if answering is True and not self.down_within(edge):
            return ""
        self.held.add(hostname)
        self.tries_held += 1
        return why or "just after our resolver or network came back"

    async def _canaries(self, other_than: str) -> list[str]:
        """The canaries to ask, of roots other than `other_than` (chosen again after an
        interval: every failure waiting asks, the database once)."""
        if self.canary_hosts:
            return [h for h in self.canary_hosts if root(h) != other_than]
        chosen_at, canaries = self._chosen.get(other_than, (float("-inf"), []))
        if time.monotonic() - chosen_at < max(self.interval, 1.0) and canaries:
            return canaries
        canaries = await in_thread_until_up(
            "choosing canaries",
            canary_db.answered_hosts,
            self.engine,
            CANARIES * CANDIDATES,
            other_than,
            self.dns_only,
        )
        self._chosen[other_than] = (time.monotonic(), canaries)
        return canaries

    async def _until_a_canary_may_be_asked(self, layer: str, other_than: str) -> float:
        """Seconds until some canary was last contacted `interval` ago (0: one may be
        asked now, or there is none to ask and the check says so at once)."""
        canaries = await self._canaries(other_than)
        if not canaries:
            return 0.0
        soonest = min(self.evidence.last_contact(name, layer) for name in canaries)
        return soonest + self._interval(layer) - time.monotonic()

    def _interval(self, layer: str) -> float:
        """A check of the network asks a host's front page: at most once an interval. One
        of DNS asks our resolver for a name, no web server: only one at a time."""
        return self.interval if layer == NETWORK else 0.0

    async def _check(self, layer: str, other_than: str) -> tuple[bool | None, str]:
        canaries = await self._canaries(other_than)
        if not canaries:
            verdict: tuple[bool | None, str] = (None, NO_CANARY)
        else:
            due = time.monotonic() - self._interval(layer)
            asked = [h for h in canaries if self.evidence.last_contact(h, layer) <= due]
            asked = asked[:CANARIES] or canaries[:1]
            outcomes = await asyncio.gather(*(self.ask(name, layer) for name in asked))
            if OK in outcomes:
                verdict = (True, "")
            else:
                said = ", ".join(f"{n} {o}" for n, o in zip(asked, outcomes, strict=True))
                verdict = (False, f"resolver/network not answering (canaries: {said})")
        self._note(*verdict)
        self._last[layer] = (time.monotonic(), *verdict)
        return verdict

    async def ask(self, hostname: str, layer: str = NETWORK) -> str:
        """The host asked directly now (OK when it answers): at DNS a fresh lookup, OK
        when it resolves; else its front page's status line. The contact is noted."""
        self.lookups += 1
        layer = self._layer(layer)
        self.evidence.contacted(hostname, layer)
        if layer == DNS:
            resolution = await deferred_to_future(self.resolver().resolve(hostname, fresh=True))
            return OK if resolution.outcome == DNS_ALIVE else resolution.outcome
        resolver, templates = self.resolver(), self.templates
        return await front_page(resolver, hostname, templates, self.timeout, self.user_agent)

    def down_within(self, seconds: float) -> bool:
        """Whether the world was seen unproven in the last `seconds` (a request that
        started then may have failed for our outage, though it answers now)."""
        return time.monotonic() - self.last_seen_down <= seconds

    def failing(self) -> tuple[LayerFailures | None, str]:
        """The layer failing most over the summary's span, and the settings behind it."""
        failures = self.tally.failing(time.monotonic())
        if failures is None:
            return None, ""
        check = settings_to_check(
            failures.layer, self.nameservers, self.canary_hosts, self.connect_timeout
        )
        return failures, check

    def reason(self, verdict: str) -> str:
        """The log's word on an unproven world: the failing layer and its top error, the
        settings to check, then what the check found."""
        failures, check = self.failing()
        return why_silent(failures, self.tally.span, check, verdict)

    def _note(self, answering: bool | None, why: str) -> None:
        if answering is True:
            if self.unproven_since is not None:
                spell = (datetime.now(UTC) - self.unproven_since).total_seconds()
                log.warning(
                    "the world answers again after %.0f s: %s held back (tried"
                    " again, not settled); blocks resume",
                    spell,
                    counted(len(self.held), "host was", "hosts were"),
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
                " HTTP are tried again, not settled; %s held back",
                self.reason(why),
                counted(len(self.held), "host"),
            )
        self._why = why
        self.sum_up_if_due()
        self.on_change(self.unproven_since, why == NO_CANARY, len(self.held))

    def sum_up_if_due(self) -> None:
        """An unproven spell is told every `summary_every` seconds: at a check, or by the
        crawl's clock (`CrawlShared`) when failures come in bursts with no check between."""
        now = time.monotonic()
        if self.unproven_since is not None and now - self._summed_up[0] >= self.summary_every:
            self._sum_up(self._why, now)

    def _sum_up(self, why: str, now: float) -> None:
        """One line for the spell so far: how long, why, and what was held back."""
        told_at, tries_then = self._summed_up
        spell = (datetime.now(UTC) - self.unproven_since).total_seconds()
        log.warning(
            "the world has not answered us for %.0f s (%s): %s held back so far,"
            " %s tried again in the last %.0f s; blocks are held",
            spell,
            self.reason(why),
            counted(len(self.held), "host"),
            counted(self.tries_held - tries_then, "failure"),
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
