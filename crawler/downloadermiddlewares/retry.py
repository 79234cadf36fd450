"""AnswerAwareRetryMiddleware: a DNS answer is not retried, a glitch is."""

from __future__ import annotations

from scrapy import Request
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.http import Response

from crawler.core.outcomes import (
    ADDRESS_REFUSED,
    DNS_NOANSWER,
    DNS_NXDOMAIN,
    DNS_TIMEOUT,
    HTTP_TIMEOUT,
)
from crawler.network.failures import classify
from crawler.network.request_meta import ROBOTS_FETCH, request_hostname

# Not retried in the same claim. NXDOMAIN, NOANSWER and a refused address are answers,
# not glitches: retrying them makes a trap cost three lookups per junk name. A DNS timeout was
# already asked twice by the resolver. A host that accepted the connection and then
# kept silent for the whole download timeout would hold its slot as long again: it
# comes back through the queue later, like any failure.
NOT_RETRIED = frozenset({DNS_NXDOMAIN, DNS_NOANSWER, DNS_TIMEOUT, HTTP_TIMEOUT, ADDRESS_REFUSED})


class AnswerAwareRetryMiddleware(RetryMiddleware):
    """RetryMiddleware that does not retry answers and waits already spent in full.

    SERVFAIL, refused and reset connections and connect/TLS timeouts are still
    retried (RETRY_TIMES), and so are server errors, but a robots.txt's.
    """

    def process_response(self, request: Request, response: Response, spider=None):
        # A robots.txt's server error is an answer (RFC 9309: unreachable, disallow):
        # asked once, its host tried again after ROBOTS_UNREACHABLE_RETRY_AFTER.
        if request.meta.get(ROBOTS_FETCH) and 500 <= response.status < 600:
            return response
        return super().process_response(request, response)

    def process_exception(self, request: Request, exception: Exception):
        outcome = classify(exception, request_hostname(request) or "")
        if outcome in NOT_RETRIED:
            return None
        return super().process_exception(request, exception)
