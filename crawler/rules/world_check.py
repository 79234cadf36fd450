"""Before a failure is believed: is it the world's silence, or is it us?

Our own resolver or network going away makes every host fail. `WorldCheck` keeps that
from settling a live host as dead, and `crawler.rules.self_check` from blocking an
innocent root (docs/design.md, rule 5). Only a failure that may be the world's silence
(`crawler.core.outages.SILENCES`) is judged here; a refusal by our own rules never is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from scrapy.utils.defer import deferred_to_future
from sqlalchemy import Engine

from crawler.core.hostnames import root
from crawler.core.outages import (
    NEVER,
    FailureTally,
    LayerFailures,
    crawl_says_it_answers,
    no_canary_reason,
    settings_to_check,
    silence_began,
    silence_ended,
    silence_so_far,
    silence_without_canary,
    why_silent,
)
from crawler.core.outcomes import DNS_ALIVE, OK
from crawler.db.rules import canaries as canary_db
from crawler.db.server.retry import in_thread_until_up
from crawler.network.probes import front_page
from crawler.rules.evidence import DNS, NETWORK, Evidence

log = logging.getLogger(__name__)

CANARIES = 3
# Canaries chosen per check: the recently contacted ones are passed over.
CANDIDATES = 4
NO_CANARY = "no host has answered yet in this database: no canary to prove the world answers us"
# Why a failure whose request began in an outage that has ended is asked again once.
BEGAN_IN_OUTAGE = "its request began while the world did not answer us"


class WorldCheck:
    """Does the world answer us now? Heard from the crawl first, a canary asked last.

    A failure is the host's own when another root answered us at its layer after the
    failure began, or within the last `recent` seconds with no failure since
    (`crawler.core.outages.crawl_says_it_answers`): a crawl proves itself without a
    probe. Only when the crawl has said nothing is a canary asked (CANARY_HOSTS, or
    hosts that ever answered OK in this database, newest first: a fresh DNS lookup for
    a DNS failure, else an HTTP status line with our User-Agent), and never a host
    contacted in the last `interval` seconds: one check answers every failure waiting
    for it. A canary that does not answer (NXDOMAIN included: our resolver lies) starts
    an outage; with no canary to ask, failures on several roots with nothing answering
    do. Each change is logged once, and an outage is summed up every `summary_every`
    seconds; it ends only on an answer asked afresh at the layer that failed.
    `on_change(unproven since or None, no canary at all, hosts held back)` hears every
    unproven check and the return (stats, the panel's banner).
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
        # An answer this fresh stands for a canary's, which would not be asked sooner.
        self.recent = interval
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
        self.spell = 0  # outages so far: a host held back in one is released at its end
        self.spell_layer = DNS  # NETWORK once the network failed in this outage
        self.ended_at = NEVER  # when the last outage ended (monotonic)
        self.held: set[str] = set()  # hosts whose failure was ours, this unproven spell
        self.tries_held = 0  # failures held back this spell (a host may fail many times)
        self._summed_up = (0.0, 0)  # when the spell was last told (monotonic), tries then
        self._why = ""  # why the world is unproven, as the last check said
        self._asking: set[str] = set()  # hosts whose failure waits for the verdict
        self._last: dict[str, tuple[float, bool | None, str]] = {}  # by layer
        self._running: dict[tuple[str, str], asyncio.Task] = {}
        self._chosen: dict[str, tuple[float, list[str]]] = {}  # canaries by other_than
        self._wake, self._rechecked_at = None, NEVER  # the outage's watch: its news, its check

    def heard(self, hostname: str, layer: str = NETWORK, began: float | None = None) -> None:
        """`hostname` answered us now (a page whose fetch `began` then: NETWORK; a name
        resolved: DNS). In an outage no proof (a connection made before it, a cached
        name): the watch asks sooner."""
        self.evidence.heard(hostname, layer, began)
        self.tally.answered(layer, time.monotonic())
        if self.unproven_since is not None and self._wake is not None:
            self._wake.set()

    async def next_check(self, every: float) -> None:
        """When the outage's watch asks again: in `every` s, or when the crawl hears an
        answer (at most once an interval)."""
        self._wake = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), every)
        rest = self._rechecked_at + self.interval - time.monotonic()
        if rest > 0:
            await asyncio.sleep(rest)

    async def answers(
        self,
        other_than: str = "",
        newer_than: float = NEVER,
        layer: str = NETWORK,
        recent: float = 0.0,
        failing: str = "",
    ) -> tuple[bool | None, str]:
        """(True, '') when a root other than `other_than` (and `failing`'s) answered at
        `layer` at or after `newer_than` (monotonic), or in the last `recent` seconds with
        no other host failing since; (False, why) when no canary does, (None, NO_CANARY)
        when there is no canary to ask.

        A failure that waited out a timeout began that long ago: an answer from before
        then says nothing about it. An unproven verdict is kept a while whatever its
        age: holding a failure back is the safe side.
        """
        layer = self._layer(layer)
        while True:
            heard, now = self.evidence.heard_at(layer, failing or other_than), time.monotonic()
            if crawl_says_it_answers(heard, newer_than, now, recent):
                # An outage's first failure, too, follows an answer with nothing failing
                # since: `recent` s after it began, the failures that follow it are in.
                if heard.last_answer >= newer_than or now >= newer_than + recent:
                    return True, ""
                await self.evidence.news(newer_than + recent - now)
                continue
            kept = self._kept(layer, newer_than)
            if kept is not None:
                return kept
            running = self._running.get((layer, other_than))
            if running is not None and not running.done():
                verdict = await asyncio.shield(running)
                if verdict[0] is not True or self._last[layer][0] >= newer_than:
                    return verdict
                continue
            canaries = await self._canaries(other_than)
            if not canaries:
                return None, NO_CANARY
            wait = self._until_a_canary_may_be_asked(layer, canaries)
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

    async def judge(
        self, hostname: str, began: float = NEVER, layer: str = NETWORK, outcome: str = ""
    ) -> str:
        """Why a failure of `hostname` that may be the world's silence is ours ('' when
        it is the host's own). `began`: when its wait began (monotonic); `layer`: where
        it failed; `outcome`: its kind, tallied for the outage's reason."""
        layer = self._layer(layer)
        self.evidence.silent(hostname, layer)
        self.tally.failed(layer, outcome or "unnamed", time.monotonic())
        self._asking.add(hostname)
        try:
            answering, why = await self.answers("", began, layer, self.recent, hostname)
            if answering is None:
                why = await self._without_canary(hostname, began, layer)
            elif answering is True:
                why = ""
        finally:
            self._asking.discard(hostname)
        if why and layer == NETWORK and self.unproven_since is not None:
            self.spell_layer = NETWORK  # the network fails: only a connection ends it now
        return why

    async def _without_canary(self, hostname: str, began: float, layer: str) -> str:
        """No canary to ask: the failure waits `recent` seconds for news. Another root
        answering makes it the host's own; several roots failing with nothing answering
        by then make it ours (an outage: a first crawl's dead hosts fail faster than its
        live ones answer); else one failure is no outage."""
        deadline = time.monotonic() + self.recent
        while True:
            now = time.monotonic()
            heard = self.evidence.heard_at(layer, hostname, now - self.tally.span)
            if crawl_says_it_answers(heard, began, now, self.recent):
                return ""
            if self.unproven_since is not None:
                return self._why  # nothing has answered since the outage began
            if now >= deadline:
                if not silence_without_canary(heard):
                    return ""
                self._note(None, no_canary_reason(heard), layer)
                return self._why
            await self.evidence.news(deadline - now)

    async def holds_back(
        self,
        hostname: str,
        began: float = NEVER,
        layer: str = NETWORK,
        outcome: str = "",
        started: float = NEVER,
    ) -> str:
        """Why a failure of `hostname` that may be the world's silence says nothing about
        the host ('' when it is the host's own): the world is silent now (the host is
        held back until it answers), or was while its request ran (`started`, monotonic:
        it is asked again once, now). A failure held back counts in the logs."""
        why = await self.judge(hostname, began, layer, outcome)
        if not why and self.silent_since(started):
            why = BEGAN_IN_OUTAGE
        if why:
            self.held.add(hostname)
            self.tries_held += 1
        return why

    def silent_since(self, started: float) -> bool:
        """Whether the world was silent at some moment since `started` (monotonic)."""
        return self.unproven_since is not None or NEVER < started <= self.ended_at

    async def _canaries(self, other_than: str) -> list[str]:
        """The canaries to ask, of roots other than `other_than`'s (chosen again after an
        interval: every failure waiting asks, the database once)."""
        if self.canary_hosts:
            return [h for h in self.canary_hosts if root(h) != other_than]
        chosen_at, canaries = self._chosen.get(other_than, (NEVER, []))
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

    def _until_a_canary_may_be_asked(self, layer: str, canaries: list[str]) -> float:
        """Seconds until some canary was last contacted `interval` ago (0: one may be
        asked now)."""
        soonest = min(self.evidence.last_contact(name, layer) for name in canaries)
        return soonest + self._interval(layer) - time.monotonic()

    def _interval(self, layer: str) -> float:
        """A check of the network asks a host's front page: at most once an interval. One
        of DNS asks our resolver for a name, no web server: only one at a time."""
        return self.interval if layer == NETWORK else 0.0

    async def _check(self, layer: str, other_than: str) -> tuple[bool | None, str]:
        canaries = await self._canaries(other_than)
        if not canaries:
            return None, NO_CANARY
        due = time.monotonic() - self._interval(layer)
        asked = [h for h in canaries if self.evidence.last_contact(h, layer) <= due]
        asked = asked[:CANARIES] or canaries[:1]
        outcomes = await asyncio.gather(*(self.ask(name, layer) for name in asked))
        if OK in outcomes:
            verdict: tuple[bool | None, str] = (True, "")
        else:
            said = ", ".join(f"{n} {o}" for n, o in zip(asked, outcomes, strict=True))
            verdict = (False, f"resolver/network not answering (canaries: {said})")
        self._note(*verdict, layer)
        self._last[layer] = (time.monotonic(), *verdict)
        return verdict

    async def recheck(self, held: set[str]) -> None:
        """While the world is silent, ask it again at the layer that failed (the watch of
        an outage: the hosts held back wait for its end, not for a timer). With no canary,
        one host held back (the least lately asked) is asked in its place."""
        if self.unproven_since is None:
            return
        self._rechecked_at = time.monotonic()
        layer = self._layer(self.spell_layer)
        if await self._canaries(""):
            await self._shared_check(layer, "")
            return
        if held:
            asked = min(sorted(held), key=lambda h: self.evidence.last_contact(h, layer))
            answered = await self.ask(asked, layer) == OK
            self._note(True if answered else None, "" if answered else self._why, layer)

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

    def _note(self, answering: bool | None, why: str, layer: str) -> None:
        """A verdict at `layer`: True ends an outage (one at DNS only an outage of DNS:
        a name resolving says nothing of the network); else it starts or goes on."""
        if answering is True:
            if self.unproven_since is not None and (layer == NETWORK or self.spell_layer == DNS):
                self._end()
            return
        if self.unproven_since is None:
            self._start(why, layer)
        elif layer == NETWORK:
            self.spell_layer = NETWORK
        self._why = why
        self.sum_up_if_due()
        self.on_change(self.unproven_since, answering is None, len(self.held))

    def _start(self, why: str, layer: str) -> None:
        self.unproven_since = datetime.now(UTC)
        self.spell += 1
        self.spell_layer = layer
        self.held = set(self._asking)
        self.tries_held = 0
        self._summed_up = (time.monotonic(), 0)
        log.warning(silence_began(self.reason(why), len(self.held)))

    def _end(self) -> None:
        spell = (datetime.now(UTC) - self.unproven_since).total_seconds()
        log.warning(silence_ended(spell, len(self.held)))
        self.unproven_since = None
        self.ended_at = time.monotonic()
        self.on_change(None, False, len(self.held))

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
        held, tried = len(self.held), self.tries_held - tries_then
        log.warning(silence_so_far(spell, self.reason(why), held, tried, now - told_at))
        self._summed_up = (now, self.tries_held)
