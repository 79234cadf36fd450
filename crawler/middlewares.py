"""BlacklistMiddleware (docs/design.md, rule 4): denied hosts never reach the network.

It sees every request — start requests, retries and redirects included — both
when scheduled and before download. `dont_filter` does not bypass it (the
retry middleware sets it); only `meta['allow_blocked']` does. It also feeds
the outcome of every request to a subdomain into its root's trap window.
"""

from __future__ import annotations

import functools
import itertools
import logging

from scrapy import Request, signals
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from crawler.core.hostnames import normalize_or_none
from crawler.core.outcomes import (
    ADDRESS_REFUSED,
    DNS_NOANSWER,
    DNS_NXDOMAIN,
    DNS_TIMEOUT,
    HTTP_TIMEOUT,
    NETWORK_FAILURES,
    OK,
)
from crawler.failures import classify
from crawler.state import CrawlState

log = logging.getLogger(__name__)

# Sent (request=, denial=) when a request is refused as it is scheduled: no errback
# runs then, so a spider that must settle the request's host listens for it.
request_denied = object()
# A request with this meta key set settles its host through an item, whose final
# outcome the pipeline feeds to the trap window (so a fallback's first try does not).
OUTCOME_BY_ITEM = "hostcrawl_outcome_by_item"
# The URL whose failure a request failed with, when it is not the request's own (its
# host's robots.txt, carried to the page).
FAILED_AT = "hostcrawl_failed_at"


def request_hostname(request: Request) -> str | None:
    """The normalized hostname a request goes to (None for a URL with no host)."""
    return _netloc_hostname(urlparse_cached(request).netloc)


@functools.lru_cache(maxsize=4096)
def _netloc_hostname(netloc: str) -> str | None:
    # Asked several times per request (scheduling, download, outcome): once per host.
    return normalize_or_none(netloc) if netloc else None


class BlacklistMiddleware:
    """Raise IgnoreRequest for a request whose hostname is blocked or no_follow."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.state = CrawlState.of(crawler)
        self._logged: set[str] = set()
        crawler.signals.connect(self.request_scheduled, signal=signals.request_scheduled)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def request_scheduled(self, request: Request, spider) -> None:
        """Raising here keeps a denied request out of the scheduler (no errback runs)."""
        try:
            self._check(request)
        except IgnoreRequest:
            self.crawler.signals.send_catch_log(
                request_denied, request=request, denial=request.meta["denial"]
            )
            raise

    def process_request(self, request: Request):
        self._check(request)
        return None

    def _check(self, request: Request) -> None:
        if request.meta.get("allow_blocked"):
            return
        hostname = request_hostname(request)
        denial = self.state.denylist.denial(hostname) if hostname else None
        if denial is None:
            return
        self.stats.inc_value("hostcrawl/blacklist/filtered")
        self.stats.inc_value(f"hostcrawl/blacklist/filtered/{denial.rule}")
        if denial.entry not in self._logged:
            self._logged.add(denial.entry)
            self.stats.inc_value("hostcrawl/blacklist/domains")
            self.stats.inc_value(f"hostcrawl/blacklist/domains/{denial.rule}")
            log.debug("Filtered request to %s: under %s entry %s", hostname, *denial[::-1])
        request.meta["denial"] = denial
        raise IgnoreRequest(f"{hostname} is under {denial.rule} entry {denial.entry}")

    def process_response(self, request: Request, response):
        self._record(request, OK)
        return response

    def process_exception(self, request: Request, exception: Exception):
        if not isinstance(exception, IgnoreRequest):
            self._record(request, classify(exception, request_hostname(request) or ""))
        return None

    def _record(self, request: Request, outcome: str) -> None:
        """Put a subdomain's outcome into its root's window (written in the background).

        robots.txt is skipped: the page request to the same host that follows
        gives the same verdict, and each write costs the crawl its time.
        """
        if request.meta.get(OUTCOME_BY_ITEM) or (
            request.meta.get("dont_obey_robotstxt") and request.url.endswith("/robots.txt")
        ):
            return
        hostname = request_hostname(request)
        if hostname is not None:
            self.state.observe_soon(hostname, outcome)


# Not retried in the same claim. NXDOMAIN, NOANSWER and a refused address are answers, not glitches:
# retrying them makes a trap cost three lookups per junk name. A DNS timeout was
# already asked twice by the resolver. A host that accepted the connection and then
# kept silent for the whole download timeout would hold its slot as long again: it
# comes back through the queue later, like any failure.
NOT_RETRIED = frozenset({DNS_NXDOMAIN, DNS_NOANSWER, DNS_TIMEOUT, HTTP_TIMEOUT, ADDRESS_REFUSED})
# A robots.txt fetch that failed so says how the page request to the same host will:
# the page request settles at once with the same failure instead of waiting again.
CARRIED_TO_THE_PAGE = NETWORK_FAILURES | {HTTP_TIMEOUT}


class AnswerAwareRetryMiddleware(RetryMiddleware):
    """RetryMiddleware that does not retry answers and waits already spent in full.

    SERVFAIL, refused and reset connections and connect/TLS timeouts are still
    retried (RETRY_TIMES).
    """

    def process_exception(self, request: Request, exception: Exception):
        outcome = classify(exception, request_hostname(request) or "")
        if outcome in NOT_RETRIED:
            return None
        return super().process_exception(request, exception)


# robots.txt fetches pending at once: at most the hosts in flight (MAX_IN_FLIGHT).
IN_FLIGHT_BOUND = 1024


def robots_key(request: Request) -> str:
    """Whose robots.txt rules a request: its scheme and netloc (a host tried over https
    and then over plain http, the fallback, has one per scheme)."""
    url = urlparse_cached(request)
    return f"{url.scheme}://{url.netloc}"


class FrontPageRobotsTxtMiddleware(RobotsTxtMiddleware):
    """RobotsTxtMiddleware for a crawler that visits each host's front page once.

    Scrapy keeps every host's parser for the life of the process (at millions
    of hosts, that is the process's memory) and logs an unreachable
    robots.txt as an ERROR with a traceback (for a crawler of dead hosts,
    the common case). This keeps the parsers of the last MAX_PARSERS hosts
    and counts fetch failures in stats, logging them at DEBUG. When robots.txt
    failed below HTTP or timed out, the page request fails the same way at
    once: a host that hangs costs one download timeout, not two.
    """

    MAX_PARSERS = 10_000

    def __init__(self, crawler) -> None:
        super().__init__(crawler)
        # netloc -> the failure of its robots.txt fetch, when the page would fail alike.
        self._unreachable: dict[str, Exception] = {}
        self._pending_bound = max(IN_FLIGHT_BOUND, crawler.settings.getint("MAX_IN_FLIGHT"))

    async def process_request(self, request: Request, spider=None) -> None:
        await super().process_request(request)
        if request.meta.get("dont_obey_robotstxt"):
            return
        # Once: a retry, or the host claimed again later, goes to the network.
        failure = self._unreachable.pop(robots_key(request), None)
        if failure is not None:
            self._stats.inc_value("hostcrawl/robotstxt/failure_carried")
            # The host's record says whose failure it is: its page was never asked for.
            request.meta[FAILED_AT] = f"{robots_key(request)}/robots.txt"
            raise failure

    async def robot_parser(self, request: Request):
        netloc = robots_key(request)
        if netloc not in self._parsers:
            self._forget_oldest()
            self._parsers[netloc] = Deferred()
            robots = Request(
                f"{netloc}/robots.txt",
                priority=self.DOWNLOAD_PRIORITY,
                meta={"dont_obey_robotstxt": True},
                callback=NO_CALLBACK,
            )
            try:
                response = await self.crawler.engine.download_async(robots)
                await self._parse_robots(response, netloc, request)
            except Exception as exc:
                log.debug("robots.txt of %s unavailable: %s", netloc, exc)
                if classify(exc, request_hostname(request) or "") in CARRIED_TO_THE_PAGE:
                    self._unreachable[netloc] = exc
                self._robots_error(exc, netloc)
            self._stats.inc_value("robotstxt/request_count")
        parser = self._parsers[netloc]
        if isinstance(parser, Deferred):
            return await maybe_deferred_to_future(parser)
        return parser

    def process_request_2(self, rp, request: Request) -> None:
        """Hand the host's robots.txt `Sitemap:` URLs to the page (a source of hostnames)."""
        sitemaps = list(getattr(getattr(rp, "rp", None), "sitemaps", ()) or ())
        if sitemaps and request.meta.get("hostcrawl_hostname"):
            request.meta["hostcrawl_sitemaps"] = sitemaps
        return super().process_request_2(rp, request)

    def _forget_oldest(self) -> None:
        """Drop settled parsers beyond MAX_PARSERS, oldest first (dicts keep order).

        Pending ones (at most the requests in flight) stay; looking at that many
        more than the excess is enough to find the settled ones to drop.
        """
        excess = len(self._parsers) - self.MAX_PARSERS
        if excess <= 0:
            return
        oldest = list(itertools.islice(self._parsers, excess + self._pending_bound))
        for netloc in oldest:
            if excess <= 0:
                break
            if not isinstance(self._parsers[netloc], Deferred):
                del self._parsers[netloc]
                self._unreachable.pop(netloc, None)
                excess -= 1
