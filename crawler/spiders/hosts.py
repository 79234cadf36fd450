"""The `hosts` spider: claim due hosts, fetch each front page, save the links' hostnames.

Claims are lazy (DESIGN.md §6): a batch is claimed only when there is room in
flight, so leases are not spent waiting in the scheduler. Every host ends in
exactly one `finish()` — its result, new links and next date in one
transaction — or, when it turns out to be denied, leaves routing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from datetime import timedelta

import scrapy
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawler.batches import Batcher
from crawler.db.database import Crawled, CrawlResult, Database
from crawler.db.listener import DenyListListener
from crawler.db.retry import in_thread_until_up
from crawler.hostnames import root
from crawler.middlewares import request_hostname
from crawler.outcomes import IGNORED, OK, classify, is_network_failure

log = logging.getLogger(__name__)

MAX_TITLE = 500


class HostsSpider(scrapy.Spider):
    name = "hosts"
    # 4xx and 5xx are answers from a live host: parse them like any page.
    handle_httpstatus_list = list(range(400, 600))

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.setup(crawler.settings)
        crawler.signals.connect(spider.spider_closed, signal=scrapy.signals.spider_closed)
        return spider

    def setup(self, settings) -> None:
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.db = Database(actor=f"crawler {self.worker}")
        self.listener = DenyListListener(self.db, settings.getfloat("DENYLIST_RELOAD", 60))
        self.listener.start()
        self.url_template = settings.get("HOST_URL_TEMPLATE", "https://{hostname}/")
        self.batch = settings.getint("CLAIM_BATCH", 32)
        self.lease = timedelta(seconds=settings.getint("CLAIM_LEASE", 600))
        self.recrawl_after = timedelta(seconds=settings.getint("RECRAWL_AFTER", 7 * 86400))
        self.poll_interval = settings.getfloat("CLAIM_POLL_INTERVAL", 2.0)
        self.close_when_drained = settings.getbool("CLOSE_WHEN_DRAINED", False)
        self.trap_window = settings.getint("TRAP_WINDOW", 50)
        self.in_flight: set[str] = set()
        self._room = asyncio.Event()
        self._finishes = Batcher("finishing hosts", self.db.finish_many)
        self._outcomes = Batcher("recording outcomes", self._record_outcomes)
        self._background: set[asyncio.Task] = set()

    async def spider_closed(self, spider) -> None:
        """Let the last window writes land, then stop listening."""
        await asyncio.gather(*self._background, return_exceptions=True)
        self.listener.stop()

    async def start(self):
        """Claim due hosts in batches while there is room; poll when none is due."""
        # Before the first request, and off the reactor thread: the middleware reads it.
        await in_thread_until_up("loading the deny list", self.db.load_denylist)
        while True:
            await self._wait_for_room()
            # Cleared before the claim: a host settling meanwhile (new links) wakes the poll.
            self._room.clear()
            hosts = await in_thread_until_up(
                "claiming", self.db.start_urls, self.batch, self.worker, self.lease
            )
            if not hosts:
                if self.close_when_drained and await self._drained():
                    log.info("nothing due and nothing in flight: drained")
                    return
                await self._wait_for_room(poll=True)
                continue
            # Handed to the engine as a batch: yielded, they would enter one per loop turn.
            for hostname in hosts:
                self.in_flight.add(hostname)
                self.crawler.engine.crawl(self.host_request(hostname))
        yield  # never reached: it makes start() the async generator Scrapy expects

    async def _drained(self) -> bool:
        """Nothing in flight here, nothing due, and no claim anywhere that could add hosts."""
        if self.in_flight:
            return False
        return not await in_thread_until_up(
            "checking for pending work", self.db.crawl_pending, self.lease
        )

    async def _wait_for_room(self, poll: bool = False) -> None:
        """Wait until fewer than two batches are in flight (or, polling, a bounded while)."""
        while len(self.in_flight) >= 2 * self.batch or self.crawler.engine.needs_backout() or poll:
            if not poll:
                self._room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), timeout=self.poll_interval)
            if poll:
                return

    def host_request(self, hostname: str) -> scrapy.Request:
        # An IPv6 literal goes in brackets in a URL.
        host = f"[{hostname}]" if ":" in hostname else hostname
        return scrapy.Request(
            self.url_template.format(hostname=host),
            callback=self.parse,
            errback=self.failed,
            dont_filter=True,
            meta={"hostname": hostname},
        )

    async def parse(self, response: Response):
        hostname = response.meta["hostname"]
        hrefs, title = page_links(response)
        final_host = request_hostname(response.request)
        if final_host and final_host != hostname:
            hrefs.append(response.url)  # a redirect's target is a discovered host too
        result = CrawlResult(OK, response.status, response.url, title)
        links = await self._finish(hostname, result, hrefs)
        self.crawler.stats.inc_value("hosts/links_saved", len(links.hostnames))

    async def failed(self, failure: Failure):
        request = failure.request
        if request.meta.get("denial"):
            self.request_denied(request)
            return
        hostname = request.meta["hostname"]
        outcome = classify(failure.value, request_hostname(request) or hostname)
        await self._finish(hostname, CrawlResult(outcome, final_url=request.url))

    def request_denied(self, request: scrapy.Request) -> None:
        """A request was refused by the deny list; settle its claimed host."""
        hostname = request.meta.get("hostname")
        if hostname is None or hostname not in self.in_flight:
            return
        denial = request.meta["denial"]
        if request_hostname(request) == hostname:
            asyncio.ensure_future(self._take_out(hostname, denial.entry))
        else:  # a redirect to a denied host: the claimed host did answer
            status = (request.meta.get("redirect_reasons") or [None])[-1]
            result = CrawlResult(OK, status if isinstance(status, int) else None, request.url)
            asyncio.ensure_future(self._finish(hostname, result))

    async def _take_out(self, hostname: str, entry: str) -> None:
        try:
            await in_thread_until_up(
                f"taking {hostname} out of routing", self.db.take_out_of_routing, hostname, entry
            )
            self.crawler.stats.inc_value(f"hosts/outcome/{IGNORED}")
        finally:
            self._settled(hostname)

    async def _finish(self, hostname: str, result: CrawlResult, hrefs=()):
        try:
            crawled = Crawled(hostname, result, tuple(hrefs), self.recrawl_after)
            links = await self._finishes.submit(crawled)
            self.crawler.stats.inc_value(f"hosts/outcome/{result.outcome}")
            return links
        finally:
            self._settled(hostname)

    def record_outcome_soon(self, hostname: str, outcome: str) -> None:
        """Feed a subdomain's outcome to its root's window, without holding up the response."""
        task = asyncio.ensure_future(self._record_outcome(hostname, outcome))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _record_outcome(self, hostname: str, outcome: str) -> None:
        # A failure may complete a trap: it goes at once, so the block lands early.
        urgent = is_network_failure(outcome)
        if await self._outcomes.submit((hostname, outcome), urgent):
            self.crawler.stats.inc_value("traps/blocked")

    def _record_outcomes(self, outcomes: list[tuple[str, str]]) -> list[str | None]:
        blocked = self.db.record_outcomes(outcomes, self.trap_window, self.db.actor)
        return [blocked.pop(root(hostname), None) for hostname, _ in outcomes]

    def _settled(self, hostname: str) -> None:
        self.in_flight.discard(hostname)
        self._room.set()


def page_links(response: Response) -> tuple[list[str], str | None]:
    """The hrefs and the title of an HTML page; none for anything else."""
    if not isinstance(response, TextResponse):
        return [], None
    try:
        hrefs = response.xpath("//a/@href | //area/@href").getall()
        title = response.xpath("normalize-space(//title)").get()
    except ValueError:  # not parseable as HTML
        return [], None
    return hrefs, (title[:MAX_TITLE] or None) if title else None
