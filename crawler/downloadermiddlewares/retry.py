"""AnswerAwareRetryMiddleware: a DNS answer is not retried, a glitch is; the web's
answers are counted, not logged one by one."""

from __future__ import annotations

import logging
import time

from scrapy import Request, signals
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.http import Response

from crawler.core.answers import WEB_ANSWERS, AnswerTally, FirstTimes
from crawler.core.outcomes import (
    ADDRESS_REFUSED,
    DNS_NOANSWER,
    DNS_NXDOMAIN,
    DNS_TIMEOUT,
    HTTP_ERROR,
    HTTP_TIMEOUT,
    HTTP_TOO_LARGE,
)
from crawler.downloadermiddlewares.robotstxt import SERVER_ERRORS
from crawler.network.failures import classify, refusal
from crawler.network.request_meta import FAILED_AT, ROBOTS_FETCH, request_hostname

log = logging.getLogger(__name__)

# Not retried in the same claim. NXDOMAIN, NOANSWER and a refused address are answers,
# not glitches: retrying them makes a trap cost three lookups per junk name. A DNS timeout was
# already asked twice by the resolver. A host that accepted the connection and then
# kept silent for the whole download timeout would hold its slot as long again: it
# comes back through the queue later, like any failure. A response over a cap (its head past
# MAX_HEADER_BYTES, a line past the client's limit) and one that is no HTTP are answers too:
# asked again, the server sends the same.
NOT_RETRIED = frozenset(
    {
        DNS_NXDOMAIN,
        DNS_NOANSWER,
        DNS_TIMEOUT,
        HTTP_TIMEOUT,
        ADDRESS_REFUSED,
        HTTP_TOO_LARGE,
        HTTP_ERROR,
    }
)
# Seconds between two counts of the web's answers in the log.
TELL_EVERY = 60.0
# Addresses whose refusal is told; past as many, refusals are only counted in the stats.
REFUSALS_TOLD = 10_000


class AnswerAwareRetryMiddleware(RetryMiddleware):
    """RetryMiddleware that does not retry answers and waits already spent in full.

    SERVFAIL, refused and reset connections and connect/TLS timeouts are still
    retried (RETRY_TIMES), and so are server errors, but a robots.txt's. Giving up on one
    of the web's answers (a dead host, a 503) is
    logged at DEBUG, not Scrapy's ERROR: the answers are counted by outcome at INFO once
    a minute (crawler.core.answers). An address refused by our own rule is told once
    per address, at WARNING, with the setting that would let it through.
    """

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.answers = AnswerTally(TELL_EVERY, time.monotonic())
        self.refusals = FirstTimes(REFUSALS_TOLD)

    @classmethod
    def from_crawler(cls, crawler):
        middleware = super().from_crawler(crawler)
        crawler.signals.connect(middleware.tell_answers, signal=signals.spider_closed)
        return middleware

    def process_exception(self, request: Request, exception: Exception):
        if request.meta.get(FAILED_AT):
            # The failure of the host's robots.txt, carried to its page: told, counted and
            # retried as robots.txt already; the page is not asked for it again.
            return None
        hostname = request_hostname(request) or ""
        outcome = classify(exception, hostname)
        if outcome == ADDRESS_REFUSED:
            self._tell_refusal(request, refusal(exception, hostname))
        elif outcome in WEB_ANSWERS:
            self._count(outcome)
            request.meta["give_up_log_level"] = logging.DEBUG
        if outcome in NOT_RETRIED:
            return None
        return super().process_exception(request, exception)

    def process_response(self, request: Request, response: Response):
        # A status in RETRY_HTTP_CODES (a 503) is the web's answer too.
        request.meta["give_up_log_level"] = logging.DEBUG
        # A robots.txt's server error is an answer (RFC 9309: unreachable, disallow):
        # asked once, its host tried again after ROBOTS_UNREACHABLE_RETRY_AFTER.
        if request.meta.get(ROBOTS_FETCH) and response.status in SERVER_ERRORS:
            return response
        return super().process_response(request, response)

    def _count(self, outcome: str) -> None:
        self.answers.add(outcome)
        if self.answers.due(time.monotonic()):
            self.tell_answers()

    def tell_answers(self) -> None:
        """The web's answers since they were last told, one line at INFO."""
        line = self.answers.tell(time.monotonic())
        if line:
            log.info("%s (each host's own outcome, not a fault of ours)", line)

    def _tell_refusal(self, request: Request, why: str) -> None:
        """`intra.corp.example: ADDRESS_REFUSED, not fetched: 10.20.0.5 is a private address,
        not in ALLOWED_PRIVATE_NETWORKS`, once per address (and why)."""
        host = request.meta.get("hostcrawl_hostname") or request_hostname(request)
        if self.refusals.first(why):
            log.warning(
                "%s: %s, not fetched: %s (nothing is sent to an address the crawl may not"
                " reach; list its network in ALLOWED_PRIVATE_NETWORKS to crawl it)",
                host,
                ADDRESS_REFUSED,
                why or "its address is not public",
            )
