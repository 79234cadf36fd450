"""BlacklistMiddleware (docs/design.md, rule 4): denied hosts never reach the network.

It sees every request — start requests, retries and redirects included — both
when scheduled and before download. `dont_filter` does not bypass it (the
retry middleware sets it); only `meta['allow_blocked']` does. It also feeds
the outcome of every request to a subdomain into its root's trap window.
"""

from __future__ import annotations

import logging

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest

from crawler.core.outcomes import (
    OK,
)
from crawler.network.failures import classify
from crawler.network.request_meta import OUTCOME_BY_ITEM, request_hostname
from crawler.shared import CrawlShared

log = logging.getLogger(__name__)

# Sent (request=, denial=) when a request is refused as it is scheduled: no errback
# runs then, so a spider that must settle the request's host listens for it.
request_denied = object()


class BlacklistMiddleware:
    """Raise IgnoreRequest for a request whose hostname is blocked or no_follow."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.state = CrawlShared.of(crawler)
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
