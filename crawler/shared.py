"""What one crawler's hostcrawl components share: CrawlShared, one per Scrapy crawler.

The worker's name, the database, the deny list, the world check, the trap guard and
the hosts in flight. Each component's from_crawler asks `CrawlShared.of(crawler)`; the
first to ask makes it, and it lives as long as its crawler (a weak mapping: nothing is
hung on the crawler). The deny list is loaded in a thread when the spider opens, before
the first request. The parts that need the database are made on first use, so a crawler
that never opens its spider (a test of one extension) starts no database.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import time
import weakref
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property

from scrapy import signals

from crawler.core.hostnames import is_subdomain
from crawler.core.outages import is_silence
from crawler.db.rules import world_silences
from crawler.db.server.engine import DatabaseUrlError, get_engine
from crawler.db.server.retry import in_thread_until_up
from crawler.network.resolver import OutcomeResolver, answered_listeners
from crawler.rules.evidence import DNS, failure_layer
from crawler.rules.held_back import HeldBack
from crawler.rules.live_deny_list import LiveDenyList
from crawler.rules.self_check import SelfCheck
from crawler.rules.trap_guard import TrapGuard
from crawler.rules.world_check import WorldCheck

log = logging.getLogger(__name__)

# A stat: when the world stopped being proven to answer us (None while it answers).
UNPROVEN_SINCE = "hostcrawl/world/unproven_since"
# Seconds between two refreshes of an unchanged silence (the panel forgets stale rows).
REFRESH_SILENCE = 60


def url_templates(settings) -> list[str]:
    """How a host's front page is asked for: the template, then the plain-HTTP fallback."""
    main = settings.get("HOST_URL_TEMPLATE")
    fallback = settings.get("HTTP_FALLBACK_TEMPLATE")
    use_fallback = main.startswith("https:") and fallback.startswith("http:")
    return [main, fallback] if use_fallback else [main]


def worker_name(settings) -> str:
    """This worker's name in claims, logs, metrics and the panel: WORKER_NAME (`make run`
    gives worker-1@host, ...), else host:pid."""
    return settings.get("WORKER_NAME") or f"{socket.gethostname()}:{os.getpid()}"


def canary_hosts(settings) -> list[str]:
    return [h.strip() for h in settings.get("CANARY_HOSTS").split(",") if h.strip()]


def crawl_engine():
    """The crawl's database; a malformed DATABASE_URL stops the crawl with one line.

    Any exception here would reach the operator as asyncio's traceback of the crawl
    task: SystemExit leaves the event loop at once, and exits 1.
    """
    try:
        return get_engine()
    except DatabaseUrlError as exc:
        log.critical("%s", exc)
        raise SystemExit(1) from None


# Hosts a worker may hold until the in-flight control sizes it (and all along without one).
UNSIZED_IN_FLIGHT = 128


@dataclass
class InFlightRoom:
    """The room for hosts in flight: the in-flight control sets it, the spider claims to it."""

    limit: int = UNSIZED_IN_FLIGHT
    allowed: int = UNSIZED_IN_FLIGHT  # the limit, and room beside it for hosts stalled on the web
    # The limit is still ramping up (doubling, or straight to the hosts due): the spider
    # counts the hosts due for it.
    growing: bool = False


# Each crawler's CrawlShared, for as long as the crawler lives.
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class CrawlShared:
    """What one crawler's hostcrawl components share (one per crawler: `of(crawler)`)."""

    @classmethod
    def of(cls, crawler) -> CrawlShared:
        """The crawler's one CrawlShared, made by whichever component asks first."""
        shared = _SHARED.get(crawler)
        if shared is None:
            shared = _SHARED[crawler] = cls(crawler)
        return shared

    def __init__(self, crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.worker = worker_name(settings)
        self.actor = f"crawler {self.worker}"
        # Each host claimed and not yet settled, since when (monotonic): the hosts spider
        # keeps it; the in-flight control counts the hosts stalled on the web apart.
        self.in_flight: dict[str, float] = {}
        self.room = InFlightRoom()  # the in-flight control's (extensions/in_flight.py)
        # The hosts in flight and those due, when the spider last counted (while the room
        # is growing): where the in-flight control's ramp aims.
        self.due = 0
        self.recheck_every = settings.getfloat("TRAP_RECHECK_INTERVAL")
        self.outage_check_every = settings.getfloat("OUTAGE_RETRY_AFTER")
        self._resolver: OutcomeResolver | None = None
        self._background: set[asyncio.Task] = set()
        self._rechecks: asyncio.Task | None = None
        self._summaries: asyncio.Task | None = None
        self._outage_watch: asyncio.Task | None = None
        self._renewals: asyncio.Task | None = None
        self._silence: tuple[datetime | None, bool, int] = (None, False, 0)
        self._told, self._told_at = self._silence, float("-inf")  # what the panel was told
        self._telling: asyncio.Task | None = None
        self._heard_dns = None  # the world check's ear on DNS answers, while open
        crawler.signals.connect(self.open, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @cached_property
    def engine(self):
        return crawl_engine()

    @cached_property
    def denylist(self) -> LiveDenyList:
        return LiveDenyList(self.engine, self.crawler.settings.getfloat("DENYLIST_RELOAD"))

    @cached_property
    def world(self) -> WorldCheck:
        settings = self.crawler.settings
        return WorldCheck(
            self.engine,
            self.resolver,
            url_templates(settings),
            canary_hosts(settings),
            timeout=settings.getfloat("DNS_TIMEOUT"),
            # An outage is summed up as often as the crawl's other figures.
            summary_every=settings.getfloat("LOGSTATS_INTERVAL"),
            on_change=self.world_changed,
            interval=settings.getfloat("CANARY_INTERVAL"),
            user_agent=settings.get("USER_AGENT"),
            nameservers=settings.get("DNS_NAMESERVERS"),
            connect_timeout=settings.getfloat("CONNECT_TIMEOUT"),
        )

    @cached_property
    def held(self) -> HeldBack:
        lease = timedelta(seconds=self.crawler.settings.getint("CLAIM_LEASE"))
        return HeldBack(self.engine, self.worker, lease, self.world)

    @cached_property
    def traps(self) -> TrapGuard:
        return TrapGuard(
            self.engine,
            self.crawler.settings.getint("TRAP_WINDOW"),
            self.actor,
            remember=self.denylist.remember,
            confirm=SelfCheck(self.engine, self.world, self.count).confirm,
            still_denied=lambda domain: self.denylist.denial(domain) is not None,
        )

    def _made(self, part: str):
        """A part made on first use, if it was (None otherwise): read without making it."""
        return self.__dict__.get(part)

    def held_back(self) -> int:
        """Hosts the world check holds back now (none while the world is proven)."""
        world = self._made("world")
        if world is None or world.unproven_since is None:
            return 0
        return len(world.held)

    def denylist_entries(self) -> int:
        """Entries in the loaded deny list (0 before it is loaded)."""
        denylist = self._made("denylist")
        return denylist.size() if denylist is not None else 0

    def count(self, key: str, n: int = 1) -> None:
        """A stat, once the crawl has its stats collector."""
        self.crawler.stats.inc_value(key, n)

    def world_changed(self, unproven_since: datetime | None, never: bool, held: int) -> None:
        """Whether the world is proven to answer us: the stats (and the metrics), and the
        panel's banner (one write at a time, the latest word wins)."""
        stats = self.crawler.stats
        stats.set_value(UNPROVEN_SINCE, unproven_since)
        stats.max_value("hostcrawl/world/held_back", held)
        if unproven_since is None:  # the outage's end: its hosts are asked again, once
            self._in_background(self.held.release_all())
        self._silence = (unproven_since, never, held)
        # Unchanged, the row is still refreshed now and then: a silent row is a live worker.
        due = self._silence != self._told or time.monotonic() - self._told_at > REFRESH_SILENCE
        if due and (self._telling is None or self._telling.done()):
            self._telling = asyncio.ensure_future(self._tell_the_panel())

    async def _tell_the_panel(self) -> None:
        try:
            await self._tell_the_panel_until_told()
        except Exception:  # the banner is a courtesy: never the crawl's failure
            log.exception("could not tell the panel whether the world answers us")

    async def _tell_the_panel_until_told(self) -> None:
        while True:
            told = since, never, held = self._silence
            if since is None:
                await in_thread_until_up("clearing", world_silences.clear, self.engine, self.worker)
            else:
                report = world_silences.report
                failures, check = self.world.failing()  # the reason as of now, sent along
                reason = world_silences.Reason(failures, self.world.tally.span, check)
                args = (self.engine, self.worker, since, never, held, reason)
                await in_thread_until_up("reporting the world's silence", report, *args)
            self._told, self._told_at = told, time.monotonic()
            if self._silence == told:
                return

    def resolver(self) -> OutcomeResolver:
        """The reactor's resolver when it is ours (the crawl's cache and failure kinds)."""
        from twisted.internet import reactor

        if isinstance(reactor.resolver, OutcomeResolver):
            return reactor.resolver
        if self._resolver is None:
            self._resolver = OutcomeResolver.from_crawler(self.crawler, reactor)
        return self._resolver

    async def open(self, spider) -> None:
        """Load the deny list off the event loop, riding out an outage; start rechecks."""
        self._heard_dns = functools.partial(self.world.heard, layer=DNS)
        answered_listeners.append(self._heard_dns)
        await in_thread_until_up("loading the deny list", self.denylist.load)
        self._rechecks = asyncio.ensure_future(self._recheck_deferred())
        self._summaries = asyncio.ensure_future(self._sum_up_outages())
        self._outage_watch = asyncio.ensure_future(self._watch_outages())
        self._renewals = asyncio.ensure_future(self._renew_held())

    async def _recheck_deferred(self) -> None:
        """Deferred blocks (ours or another worker's) are looked at again now and then."""
        while True:
            await asyncio.sleep(self.recheck_every)
            blocked = await self.traps.recheck_deferred()
            self.crawler.stats.inc_value("hostcrawl/traps/blocked", len(blocked))

    async def _sum_up_outages(self) -> None:
        """An outage's summary line comes on time, whenever its failures come."""
        while True:
            await asyncio.sleep(1.0)
            self.world.sum_up_if_due()

    async def _watch_outages(self) -> None:
        """While the world is silent, it is asked again at the layer that failed every
        OUTAGE_RETRY_AFTER, or sooner when the crawl hears an answer: the hosts held back
        wait for its answer, and nothing else may ask (the crawl may have nothing left)."""
        while True:
            await self.world.next_check(self.outage_check_every)
            if self.world.unproven_since is not None:
                asked = self.world.recheck(self.held.hosts())
                await self._surviving("asking whether the world answers again", asked)

    async def _renew_held(self) -> None:
        """The claims of the hosts held back are renewed every third of a lease, apart
        from the checks (one that waits out a silent canary must not let them run out)."""
        while True:
            await asyncio.sleep(self.held.renew_every())
            await self._surviving("renewing the hosts held back", self.held.renew())

    async def _surviving(self, what: str, step) -> None:
        """One step of a watch that must go on: an error is logged, the next step runs."""
        try:
            await step
        except Exception:
            log.exception("%s failed; tried again at the next step", what)

    def _in_background(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def observe_soon(self, hostname: str, outcome: str, judged: bool = False) -> None:
        """Feed a subdomain's outcome to its root's window, without holding anyone up
        (`judged`: the world check has found its failure the host's own already)."""
        if is_subdomain(hostname):
            self._in_background(self._observe(hostname, outcome, judged))

    async def _observe(self, hostname: str, outcome: str, judged: bool) -> None:
        if not judged and is_silence(outcome):
            layer = failure_layer(outcome)
            if await self.world.judge(hostname, layer=layer, outcome=outcome):
                return  # our outage: not the host's failure
        if await self.traps.observe(hostname, outcome):
            self.crawler.stats.inc_value("hostcrawl/traps/blocked")

    async def close(self, spider) -> None:
        """Let the last window writes (and blocks) land, then stop listening."""
        if self._heard_dns is None:
            return  # never opened: nothing was started
        with contextlib.suppress(ValueError):
            answered_listeners.remove(self._heard_dns)
        for task in (self._summaries, self._outage_watch, self._renewals):
            if task is not None:
                task.cancel()
        if self._rechecks is not None:
            self._rechecks.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._rechecks
        await asyncio.gather(*self._background, return_exceptions=True)
        # A block deferred during an outage that has ended is not left for later.
        with contextlib.suppress(Exception):
            blocked = await asyncio.wait_for(self.traps.recheck_deferred(), 60)
            self.crawler.stats.inc_value("hostcrawl/traps/blocked", len(blocked))
        if self._telling is not None:
            await asyncio.gather(self._telling, return_exceptions=True)
        with contextlib.suppress(Exception):  # a stopped worker holds nothing back
            await asyncio.wait_for(self.held.release_all(), 60)
            await asyncio.to_thread(world_silences.clear, self.engine, self.worker)
        self.denylist.stop()
