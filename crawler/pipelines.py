"""The item pipeline that writes what the hosts spider settled to Postgres (docs/design.md, rule 6).

Each HostItem's result, new hostnames and next date are written by
`queue.finish_many`, batched with the items of other hosts in one
transaction; a denied host's row leaves routing. The item's links go to the
database as the spider made them; what the database answers (the names that
were new) comes back to this pipeline, which hands it to the wildcard and
flood watches and the stats: the item itself is left as it came.
A write that fails leaves the host claimed until its lease runs out: nothing
is lost, the host is simply crawled again.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from scrapy.exceptions import DropItem

from crawler.core.floods import FloodWatch
from crawler.core.outages import is_silence
from crawler.core.outcomes import (
    DNS_TIMEOUT,
    HTTP_ROBOTS_UNREACHABLE,
    HTTP_TIMEOUT,
    OK,
    TCP_TIMEOUT,
    TLS_TIMEOUT,
)
from crawler.core.urls import stored_url
from crawler.db.crawl import known_names, queue
from crawler.db.crawl.queue import Added, Crawled, CrawlResult
from crawler.db.rules import denied_rows, floods
from crawler.db.server.retry import in_thread_until_up
from crawler.items import HostItem
from crawler.rules.evidence import failure_layer
from crawler.rules.wildcards import WildcardWatch
from crawler.shared import CrawlShared
from crawler.utils.batcher import Batcher

log = logging.getLogger(__name__)


class HostWritePipeline:
    """Write each HostItem; leave other items alone."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.state = CrawlShared.of(crawler)
        self.wildcards = WildcardWatch(crawler, self.state.engine)
        settings = crawler.settings
        # The trap rule's window, per page that named new registered domains.
        self.floods = FloodWatch(settings.getint("TRAP_WINDOW"))
        self.recrawl_after = timedelta(seconds=settings.getint("RECRAWL_AFTER"))
        # RFC 9309 2.3.1.4: complete disallow while robots.txt is unreachable; asked again
        # sooner than a crawled host (2.4: a robots.txt is kept at most 24 hours).
        robots_after = timedelta(seconds=settings.getint("ROBOTS_UNREACHABLE_RETRY_AFTER"))
        self.after = {HTTP_ROBOTS_UNREACHABLE: robots_after}
        # How long a failure of each kind waited before it came: the world's verdict
        # must be newer than the wait's start to say whose failure it was.
        # The resolver asks a silent server twice.
        connect = settings.getfloat("CONNECT_TIMEOUT")
        self.waited = {
            DNS_TIMEOUT: 2 * settings.getfloat("DNS_TIMEOUT"),
            TCP_TIMEOUT: connect,
            TLS_TIMEOUT: connect,
            HTTP_TIMEOUT: settings.getfloat("DOWNLOAD_TIMEOUT"),
        }
        self._finishes = Batcher("finishing hosts", self._finish_many)
        self.known = known_names.set_size(self.state.engine, settings.getint("KNOWN_NAMES"))

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def process_item(self, item):
        if not isinstance(item, HostItem):
            return item
        added: Added = ()
        if item.denied_by is not None:
            await self._take_out(item)
        else:
            added = await self._finish(item)
        stats = self.crawler.stats
        stats.inc_value(f"hostcrawl/hosts/outcome/{item.outcome}")
        stats.inc_value("hostcrawl/hosts/links_saved", len(added))
        stats.set_value("hostcrawl/names/known_skipped", self.known.skipped)
        return item

    async def _finish(self, item: HostItem) -> Added:
        """Write a settled host; the names its page added, as the database answered."""
        # Asked again after an outage: whatever it answers now settles it (and is forgotten).
        asked_again = self.state.held.asked_again(item.hostname)
        if item.outcome == OK:
            self.state.world.heard(item.hostname, began=self.state.in_flight.get(item.hostname))
        elif is_silence(item.outcome) and not asked_again:
            await self._unless_ours(item)
        added = await self._finishes.submit(self._crawled(item))
        self.wildcards.saw(added)
        await self._watch_floods(item, added)
        self.state.observe_soon(item.hostname, item.outcome, judged=True)
        return added

    async def _watch_floods(self, item: HostItem, added: Added) -> None:
        """A page whose new registered domains all fail at DNS is named to the operator
        (the log, its host page), who may block it; seen within this worker (its share
        of those names)."""
        self.floods.added(item.hostname, added)
        flood = self.floods.settled(item.hostname, item.outcome)
        if flood is None:
            return
        why = flood.describe()
        self.crawler.stats.inc_value("hostcrawl/floods/pages")
        log.warning("%s; block %s if it is no site", why, flood.page)
        mark = floods.mark_flood
        await in_thread_until_up("marking a name flood", mark, self.state.engine, flood.page, why)

    async def _unless_ours(self, item: HostItem) -> None:
        """A failure that may be the world's silence, while the world is not proven to
        answer us, says nothing about the host: it is held back (still claimed, so a
        draining crawl waits) and asked again when the world answers, not settled, and
        stays out of the trap window. Once: its answer to that second request settles it."""
        began = time.monotonic() - self.waited.get(item.outcome, 0.0)
        started = self.state.in_flight.get(item.hostname, began)
        layer = failure_layer(item.outcome)
        world = self.state.world
        why = await world.holds_back(item.hostname, began, layer, item.outcome, started)
        if not why:
            return
        await self.state.held.hold(item.hostname, item.outcome)
        self.crawler.stats.inc_value("hostcrawl/outage/retried")
        raise DropItem(
            f"{item.hostname}: {item.outcome} while {why}; asked again once the world answers",
            # By rule, one per host and try: the outage itself is told by the world
            # check (a line as it starts, a summary now and then, a line as it ends).
            log_level="DEBUG",
        )

    def _crawled(self, item: HostItem) -> Crawled:
        """The item's result, and its links as they are."""
        result = CrawlResult(
            item.outcome,
            item.http_status,
            stored_url(item.final_url),
            item.title,
            item.scheme,
            item.extract_stopped,
        )
        after = self.after.get(item.outcome, self.recrawl_after)
        return Crawled(item.hostname, result, item.links, after)

    def _finish_many(self, crawled: list[Crawled]) -> list[Added]:
        return queue.finish_many(self.state.engine, crawled)

    async def _take_out(self, item: HostItem) -> None:
        await in_thread_until_up(
            f"taking {item.hostname} out of routing",
            denied_rows.take_out_denied,
            self.state.engine,
            item.hostname,
            item.denied_by,
        )
