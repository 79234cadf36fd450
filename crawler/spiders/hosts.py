"""The `hosts` spider: claim due hosts, fetch each front page, yield one item per host.

Claims are lazy: hosts are claimed only when there is room in
flight, so leases are not spent waiting in the scheduler. The room is the
worker's in-flight limit (crawler/extensions/in_flight.py sizes it at run time, up to
MAX_IN_FLIGHT); one claim fills it, a CLAIM_BATCH up to MAX_CLAIM_BATCHES of them.
Every claimed host settles as exactly one HostItem — crawled, failed or denied — which the
pipeline writes (result, new links and next date in one transaction). A host
stays "in flight" until its item has passed the pipelines.

An outage is ridden out (crawler.db.server.retry); any other error of the claim (a statement
the database refuses, a bug) closes the crawl with the reason CLAIM_FAILED, which
`scrapy crawl` (crawler/commands/crawl.py) turns into exit status 1: ended quietly, the
loop would look drained and a supervisor would not restart the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import timedelta

import scrapy
from scrapy.exceptions import CloseSpider
from scrapy.http import Response
from twisted.python.failure import Failure

from crawler.core.denylist import Denial
from crawler.core.hostnames import local_suffixes, root
from crawler.core.links import FilteredLinks
from crawler.core.outcomes import (
    HTTP_UNFINISHED,
    IGNORED,
    OK,
    TCP_REFUSED,
    TCP_RESET,
    TCP_TIMEOUT,
    TLS_CERTIFICATE,
    TLS_HANDSHAKE,
    TLS_TIMEOUT,
    layer_of,
    status_of,
    told_over_the_fallback,
)
from crawler.core.sources import parse_groups
from crawler.core.words import counted
from crawler.db.crawl import claims, unfinished
from crawler.db.server.retry import in_thread_until_up
from crawler.downloadermiddlewares.deny import request_denied
from crawler.items import HostItem
from crawler.network import reader
from crawler.network.failures import classify
from crawler.network.reader import READ_OFF_LOOP_STAT
from crawler.network.request_meta import FAILED_AT, OUTCOME_BY_ITEM, request_hostname
from crawler.shared import CrawlShared
from crawler.spiders.discovery import (
    LimitSettings,
    discover,
    discover_paced,
    heavy,
    parts_of,
)

# Stats: links a page offered that were not saved, by reason (crawler.core.links).
DROPPED_PREFIX = "hostcrawl/links/dropped/"
# Stats: fetches whose reading stopped before its end, by why (crawler.core.budget).
STOPPED_PREFIX = "hostcrawl/extract/stopped/"
# Stats: hosts claimed after their leases ran out twice in flight (crawler.db.crawl.unfinished).
UNFINISHED_STAT = "hostcrawl/hosts/unfinished"

log = logging.getLogger(__name__)

# Failures below HTTP on the host's own address: plain HTTP may still answer.
# A DNS failure is the same for both schemes, so it never falls back.
FALLS_BACK = frozenset(
    {TCP_REFUSED, TCP_RESET, TCP_TIMEOUT, TLS_HANDSHAKE, TLS_TIMEOUT, TLS_CERTIFICATE}
)
# The outcome of the https try a fallback request follows.
HTTPS_OUTCOME = "hostcrawl_https_outcome"
# Most hosts one claim takes, in CLAIM_BATCHes: a bigger claim locks more roots at once.
MAX_CLAIM_BATCHES = 8
# Seconds between two counts of the hosts due while the in-flight limit ramps up (it moves
# every half second).
COUNT_DUE_EVERY = 0.4
# The close reason of a crawl whose claim failed other than by an outage.
CLAIM_FAILED = "claim_failed"


class HostsSpider(scrapy.Spider):
    name = "hosts"
    # 4xx and 5xx are answers from a live host: parse them like any page.
    handle_httpstatus_list = list(range(400, 600))

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        # Scrapy makes the spider before the add-ons apply their settings: read them
        # once the spider opens.
        crawler.signals.connect(spider.setup, signal=scrapy.signals.spider_opened)
        return spider

    def setup(self) -> None:
        crawler = self.crawler
        settings = crawler.settings
        self.state = CrawlShared.of(crawler)
        self.url_template = settings.get("HOST_URL_TEMPLATE")
        self.fallback_template = settings.get("HTTP_FALLBACK_TEMPLATE")
        self.batch = settings.getint("CLAIM_BATCH")
        self.root_limits = claims.RootLimits(
            settings.getint("ROOT_CONCURRENCY"), settings.getint("ROOT_BUDGET")
        )
        self.lease = timedelta(seconds=settings.getint("CLAIM_LEASE"))
        self.poll_interval = settings.getfloat("CLAIM_POLL_INTERVAL")
        self.close_when_drained = settings.getbool("CLOSE_WHEN_DRAINED")
        self.sources = parse_groups(settings.get("DISCOVERY_SOURCES"))
        self.local = local_suffixes(settings.get("LOCAL_SUFFIXES"))
        self.limits = LimitSettings.of(settings)
        # One bound method per callback for every request: Scrapy remembers its check of a
        # callback's source under a weak reference to the callback object, so a new one per
        # request was read again (inspect, ast: ~5 ms) whenever the remembered one died.
        self.on_page, self.on_failure = self.parse, self.failed
        # Each host in flight, since when (monotonic), kept in the crawl's shared state:
        # the in-flight control counts the hosts stalled on the web apart.
        self.in_flight = self.state.in_flight
        # Claimed hosts settled without a fetch (refused as scheduled, or poison pills).
        self._to_settle: list[HostItem] = []
        self._room = asyncio.Event()
        # The last claim came back short: fewer hosts are due (or free of their roots'
        # limits) than a claim step, and waiting for that many free slots would hold back
        # the few that are (the crawl's tail: a root's next host behind hosts that hang).
        self._short = False
        self.max_in_flight = settings.getint("MAX_IN_FLIGHT")
        self._due_counted = float("-inf")  # when the hosts due were last counted
        self._counting: asyncio.Future | None = None  # the count under way
        done = (scrapy.signals.item_scraped, scrapy.signals.item_dropped, scrapy.signals.item_error)
        for signal in done:
            crawler.signals.connect(self._item_done, signal=signal)
        crawler.signals.connect(self._request_denied, signal=request_denied)
        crawler.signals.connect(self._forgive_in_flight, signal=scrapy.signals.spider_closed)
        # The reader process of heavy responses (crawler.spiders.discovery) lives as the
        # crawl: started as it opens (here), stopped as it closes.
        reader.start()
        crawler.signals.connect(reader.stop, signal=scrapy.signals.spider_closed)

    async def start(self):
        """Claim due hosts in batches while there is room; poll when none is due.

        Hosts refused as their request was scheduled, and poison pills, settle here, as
        items.
        """
        while True:
            while self._to_settle:
                yield self._to_settle.pop()
            await self._wait_for_room()
            # Cleared before the claim: a host settling meanwhile (new links) wakes the poll.
            self._room.clear()
            s, asked = self.state, self._claim_size()
            claimed = await self._ask(
                "claiming",
                claims.claim_polite,
                s.engine,
                asked,
                s.worker,
                self.lease,
                self.root_limits,
            )
            # A host held back in an outage whose lease ran out is held still, not fetched.
            hosts = await self._unless_unfinished(s.held.not_held(claimed.hosts))
            self._count_claim(claimed)
            if not hosts and self.close_when_drained and await self._drained():
                log.info("nothing due and nothing in flight: drained")
                return
            # Handed to the engine as a batch: yielded, they would enter one per loop turn.
            now = time.monotonic()
            for hostname in hosts:
                self.in_flight[hostname] = now
                self.crawler.engine.crawl(self.host_request(hostname))
            self._short = len(hosts) < asked
            if not self._short and self.state.room.growing:
                self._count_due()
            if self._short:
                # Nothing more is due, or what is due is held by its roots (ROOT_CONCURRENCY):
                # claiming again before a host settles (or a poll interval passes) would come
                # back empty, at the database's cost. A refused host wakes the loop at once.
                await self._wait_for_room(poll=True)

    def _count_due(self) -> None:
        """Count the hosts in flight and those due, for the in-flight control's ramp, beside
        the claims (awaited, a count under a busy worker held each claim of 256 hosts
        0.3 s more): one count at a time, at most once in COUNT_DUE_EVERY seconds, counting
        no further than MAX_IN_FLIGHT."""
        now = time.monotonic()
        if now - self._due_counted < COUNT_DUE_EVERY or self._counting:
            return
        self._due_counted = now
        self._counting = asyncio.ensure_future(self._counted_due())

    async def _counted_due(self) -> None:
        room = self.max_in_flight - len(self.in_flight)
        try:
            due = await asyncio.to_thread(claims.count_due, self.state.engine, room)
        except Exception as exc:  # a hint only: the ramp doubles without it
            log.debug("counting the hosts due failed: %s", exc)
        else:
            self.state.due = len(self.in_flight) + due
        finally:
            self._counting = None

    async def _unless_unfinished(self, hosts: list[str]) -> list[str]:
        """The claimed hosts to fetch; the ones whose leases ran out twice in flight (a
        poison pill) settle as HTTP_UNFINISHED instead, from start()."""
        if not hosts:
            return hosts
        poisoned = set(
            await self._ask("counting claims", unfinished.count_claims, self.state.engine, hosts)
        )
        for hostname in sorted(poisoned):
            log.warning("%s: claimed after two leases ran out in flight; put off", hostname)
            self.crawler.stats.inc_value(UNFINISHED_STAT)
            self.in_flight[hostname] = time.monotonic()
            self._to_settle.append(HostItem(hostname, HTTP_UNFINISHED))
        return [h for h in hosts if h not in poisoned]

    async def _forgive_in_flight(self) -> None:
        """Stopping gracefully, this worker did not freeze on the hosts it still holds:
        their claims are not counted as unfinished (crawler.db.crawl.unfinished)."""
        if not self.in_flight:
            return
        hosts, worker = list(self.in_flight), self.state.worker
        try:
            await asyncio.to_thread(unfinished.forgive, self.state.engine, hosts, worker)
        except Exception as exc:  # their counts stay: a host may be put off once too often
            log.warning(
                "could not take back the claim counts of %s: %s", counted(len(hosts), "host"), exc
            )

    def _count_claim(self, claimed: claims.Claim) -> None:
        stats = self.crawler.stats
        stats.inc_value("hostcrawl/claims")
        if not claimed.hosts:
            stats.inc_value("hostcrawl/claims/empty")
        if claimed.over_budget:
            stats.inc_value("hostcrawl/roots/over_budget", len(claimed.over_budget))

    async def _drained(self) -> bool:
        """Nothing in flight here, nothing due, and no claim anywhere that could add hosts."""
        if self.in_flight:
            return False
        return not await self._ask(
            "checking for pending work", claims.crawl_pending, self.state.engine, self.lease
        )

    async def _ask(self, what: str, fn, *args):
        """The database's answer, through outages; CloseSpider(CLAIM_FAILED) on any other
        error, so the crawl ends with a reason and `scrapy crawl` exits 1."""
        try:
            return await in_thread_until_up(what, fn, *args)
        except Exception as exc:
            log.error("%s failed, closing the crawl (%s): %s", what, CLAIM_FAILED, exc)
            raise CloseSpider(CLAIM_FAILED) from exc

    def _free_slots(self) -> int:
        """Hosts that fit under the in-flight limit now (hosts stalled on the web beside it)."""
        return self.state.room.allowed - len(self.in_flight)

    def _claim_step(self) -> int:
        """The fewest hosts worth a claim: a CLAIM_BATCH, or half the limit if less; one
        after a short claim (what is due would not fill more)."""
        if self._short:
            return 1
        return min(self.batch, max(1, self.state.room.limit // 2))

    def _claim_size(self) -> int:
        """Enough hosts to fill the room, in one claim of at most MAX_CLAIM_BATCHES batches."""
        return max(self._claim_step(), min(self._free_slots(), MAX_CLAIM_BATCHES * self.batch))

    async def _wait_for_room(self, poll: bool = False) -> None:
        """Wait until a claim's worth fits under the in-flight limit (or, polling, a while)."""
        while not self._to_settle and (
            self._free_slots() < self._claim_step() or self.crawler.engine.needs_backout() or poll
        ):
            if not poll:
                self._room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), timeout=self.poll_interval)
            if poll:
                return

    def host_request(self, hostname: str, https_outcome: str | None = None) -> scrapy.Request:
        """The request for a host's front page (by HTTP_FALLBACK_TEMPLATE after an
        https try that failed with `https_outcome`)."""
        fallback = https_outcome is not None
        template = self.fallback_template if fallback else self.url_template
        # An IPv6 literal goes in brackets in a URL.
        host = f"[{hostname}]" if ":" in hostname else hostname
        url = template.format(hostname=host)
        return scrapy.Request(
            url,
            callback=self.on_page,
            errback=self.on_failure,
            dont_filter=True,
            meta={
                "hostcrawl_hostname": hostname,
                "hostcrawl_scheme": url.partition(":")[0].lower(),
                "hostcrawl_fallback": fallback,
                HTTPS_OUTCOME: https_outcome,
                OUTCOME_BY_ITEM: True,
                # One Scrapy download slot per root: CONCURRENT_REQUESTS_PER_DOMAIN
                # then applies per root (Downloader.DOWNLOAD_SLOT).
                "download_slot": root(hostname),
            },
        )

    def parse(self, response: Response):
        """The page's HostItem; a heavy response's, later, read off the event loop
        (crawler.spiders.discovery: the other hosts go on meanwhile)."""
        hostname = response.meta["hostcrawl_hostname"]
        denylist = self.state.denylist.loaded
        limits = self.limits.of_fetch(response.meta, hostname)
        args = (response, hostname, denylist, self.sources, self.local, limits)
        parts = parts_of(response, self.sources)
        if heavy(parts):
            return self._page_read_off_loop(response, parts, limits, args)
        return [self._page_item(response, limits, *discover(*args, parts=parts))]

    async def _page_read_off_loop(self, response, parts, limits, args) -> list[HostItem]:
        self.crawler.stats.inc_value(READ_OFF_LOOP_STAT)
        read = await discover_paced(response, parts, *args[1:])
        return [self._page_item(response, limits, *read)]

    def _page_item(self, response: Response, limits, links: FilteredLinks, title) -> HostItem:
        stopped = limits.budget.stopped
        self._count_page(links, stopped, response.meta.get("hostcrawl_fallback"))
        return HostItem(
            response.meta["hostcrawl_hostname"],
            OK,
            response.status,
            response.url,
            title,
            response.meta.get("hostcrawl_scheme"),
            links=links,
            extract_stopped=stopped,
        )

    def _count_page(self, links: FilteredLinks, stopped: str | None, fallback: bool) -> None:
        """The stats of a page: names found per group, links dropped per reason."""
        stats = self.crawler.stats
        if stopped is not None:
            stats.inc_value(f"{STOPPED_PREFIX}{stopped}")
        for group, count in links.by_group.items():
            stats.inc_value(f"hostcrawl/found/{group}", count)
        for reason, count in links.dropped.items():
            stats.inc_value(f"{DROPPED_PREFIX}{reason}", count)
        if fallback:
            stats.inc_value("hostcrawl/fallback/answered")

    def failed(self, failure: Failure):
        request = failure.request
        denial = request.meta.get("denial")
        if denial is not None:
            yield denied_item(request, denial)
            return
        hostname = request.meta["hostcrawl_hostname"]
        outcome = classify(failure.value, request_hostname(request) or hostname)
        if self._falls_back(request, outcome):
            self.crawler.stats.inc_value("hostcrawl/fallback/tried")
            yield self.host_request(hostname, https_outcome=outcome)
            return
        outcome = told_over_the_fallback(request.meta.get(HTTPS_OUTCOME), outcome)
        # A name that does not resolve failed for the host, not for its robots.txt: its
        # record shows the page asked for.
        dns = layer_of(outcome) == "DNS"
        final_url = request.url if dns else request.meta.get(FAILED_AT, request.url)
        yield HostItem(hostname, outcome, status_of(failure.value), final_url=final_url)

    def _falls_back(self, request: scrapy.Request, outcome: str) -> bool:
        """Try plain HTTP once when https failed below HTTP at the host itself."""
        return (
            self.fallback_template.startswith("http:")
            and request.meta.get("hostcrawl_scheme") == "https"
            and not request.meta.get("hostcrawl_fallback")
            and outcome in FALLS_BACK
            and request_hostname(request) == request.meta["hostcrawl_hostname"]
        )

    def _request_denied(self, request: scrapy.Request, denial: Denial) -> None:
        """A request was refused as it was scheduled: its claimed host settles from start()."""
        if request.meta.get("hostcrawl_hostname") in self.in_flight:
            self._to_settle.append(denied_item(request, denial))
            self._room.set()

    def _item_done(self, item, **kwargs) -> None:
        """Past the pipelines (written, dropped or failed): the host is no longer in flight."""
        if isinstance(item, HostItem):
            self.in_flight.pop(item.hostname, None)
            self._room.set()


def denied_item(request: scrapy.Request, denial: Denial) -> HostItem:
    """The item of a claimed host whose request the deny list refused."""
    hostname = request.meta["hostcrawl_hostname"]
    if request_hostname(request) == hostname:
        return HostItem(hostname, IGNORED, final_url=request.url, denied_by=denial.entry)
    # A redirect to a denied host: the claimed host did answer.
    status = (request.meta.get("redirect_reasons") or [None])[-1]
    return HostItem(hostname, OK, status if isinstance(status, int) else None, request.url)
