"""classify(): each failure Scrapy and Twisted raise, as the outcome the trap window counts.

The end-to-end crawl (tests/e2e/test_outcomes.py) produces every kind loopback
can; this table also covers the ones it cannot, such as a connect timeout
(a SYN nobody answers), in the shapes Scrapy 2.19 wraps them in.
"""

from __future__ import annotations

import pytest
from OpenSSL import SSL
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from scrapy.http import HtmlResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet import error as tx
from twisted.python.failure import Failure
from twisted.web._newclient import ParseError, ResponseFailed, ResponseNeverReceived

from crawler.core.outcomes import is_network_failure
from crawler.network.download import TLSHandshakeTimeout
from crawler.network.failures import (
    RedirectLoop,
    RobotsUnreachable,
    TooManyRedirects,
    classify,
)
from crawler.network.resolver import DNSFailure, Resolution


def wrapped(outer: BaseException, cause: BaseException) -> BaseException:
    """`outer` raised `from cause`, as scrapy.utils._download_handlers does."""
    outer.__cause__ = cause
    return outer


def never_received(reason: BaseException) -> BaseException:
    return wrapped(DownloadFailedError("failed"), ResponseNeverReceived([Failure(reason)]))


# scrapy.utils._download_handlers.get_maxsize_msg
MAX_SIZE = (
    "Received 9 bytes which is larger than download max size (1) in request <GET http://big.test/>."
)

CASES = [
    (IgnoreRequest("blocked"), "IGNORED"),
    (
        wrapped(CannotResolveHostError("x"), DNSFailure(Resolution("x.test", "DNS_SERVFAIL"))),
        "DNS_SERVFAIL",
    ),
    (CannotResolveHostError("no such host"), "DNS_ERROR"),
    (
        wrapped(DownloadConnectionRefusedError("refused"), tx.ConnectionRefusedError()),
        "TCP_REFUSED",
    ),
    (wrapped(DownloadTimeoutError("connect"), tx.TimeoutError()), "TCP_TIMEOUT"),
    (wrapped(DownloadFailedError("connect"), tx.TCPTimedOutError()), "TCP_TIMEOUT"),
    (tx.TCPTimedOutError(), "TCP_TIMEOUT"),  # Scrapy 2.19 leaves ConnectErrors unwrapped
    (DownloadTimeoutError("Getting http://slow.test/ took longer than 2 seconds."), "HTTP_TIMEOUT"),
    (DownloadCancelledError(MAX_SIZE), "HTTP_TOO_LARGE"),
    (never_received(SSL.Error([("SSL routines", "", "wrong version number")])), "TLS_HANDSHAKE"),
    (never_received(TLSHandshakeTimeout("took longer than 5 s")), "TLS_TIMEOUT"),
    # A certificate chain past OpenSSL's max_cert_list (100 KB): the certificate failed.
    (
        never_received(SSL.Error([("SSL routines", "", "excessive message size")])),
        "TLS_CERTIFICATE",
    ),
    (RedirectLoop("a -> a"), "HTTP_REDIRECT_LOOP"),
    (TooManyRedirects("max redirections reached"), "HTTP_TOO_MANY_REDIRECTS"),
    (RobotsUnreachable("robots.txt answered 503"), "HTTP_ROBOTS_UNREACHABLE"),
    (HttpError(HtmlResponse("http://odd.test/", status=99999), "unhandled"), "HTTP_BAD_STATUS"),
    (never_received(tx.ConnectionLost()), "TCP_RESET"),
    (wrapped(DownloadFailedError("lost"), tx.ConnectionLost()), "TCP_RESET"),
    # A status line that is none, or a line past 16 KB: the server answered, broken.
    (never_received(ParseError("non-integer status code", b"HTTP/1.1 two")), "HTTP_ERROR"),
    (
        wrapped(DownloadFailedError("x"), ResponseFailed([Failure(ParseError("too long", b""))])),
        "HTTP_ERROR",
    ),
    (
        wrapped(
            CannotResolveHostError("x"), DNSFailure(Resolution("127.0.0.9", "ADDRESS_REFUSED"))
        ),
        "ADDRESS_REFUSED",
    ),
    (ValueError("something else"), "HTTP_ERROR"),
]


@pytest.mark.parametrize(("exc", "outcome"), CASES, ids=[o for _, o in CASES])
def test_classify(exc, outcome):
    assert classify(exc, "unknown.test") == outcome


def test_a_host_that_answered_never_feeds_a_trap():
    """A slow, huge or broken page proves the name leads somewhere: not a trap failure."""
    answered = {o for _, o in CASES if not is_network_failure(o)}
    assert answered == {
        "IGNORED",
        "HTTP_TIMEOUT",
        "HTTP_TOO_LARGE",
        "HTTP_ERROR",
        "HTTP_REDIRECT_LOOP",
        "HTTP_TOO_MANY_REDIRECTS",
        "HTTP_ROBOTS_UNREACHABLE",
        "HTTP_BAD_STATUS",
    }
