"""AnswerAwareRetryMiddleware: a DNS answer is not retried, a glitch is."""

from __future__ import annotations

from scrapy import Request
from scrapy.downloadermiddlewares.retry import RetryMiddleware

from crawler.core.outcomes import (
    ADDRESS_REFUSED,
    DNS_NOANSWER,
    DNS_NXDOMAIN,
    DNS_TIMEOUT,
    HTTP_ERROR,
    HTTP_TIMEOUT,
    HTTP_TOO_LARGE,
)
from crawler.network.failures import classify
from crawler.network.request_meta import request_hostname

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
