"""Which outcome a failed request came to: Scrapy's and Twisted's exceptions → kinds.

Scrapy wraps Twisted's errors (CannotResolveHostError, DownloadFailedError…);
the original is in __cause__, and a TLS error hides in its `reasons`. Our
resolver keeps the DNS failure's real kind (crawler.network.resolver).
"""

from __future__ import annotations

from OpenSSL import SSL
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from twisted.internet import error as tx
from twisted.web._newclient import ParseError

from crawler.core.outcomes import (
    DNS_ERROR,
    HTTP_ERROR,
    HTTP_TIMEOUT,
    HTTP_TOO_LARGE,
    IGNORED,
    TCP_REFUSED,
    TCP_RESET,
    TCP_TIMEOUT,
    TLS_HANDSHAKE,
    TLS_TIMEOUT,
)
from crawler.network.download import TLSHandshakeTimeout
from crawler.network.headerbound import HeadersTooLarge
from crawler.network.resolver import DNSFailure, last_failure, last_refusal


def classify(exc: BaseException, hostname: str) -> str:
    """The outcome type of a failed request to `hostname`."""
    cause = exc.__cause__ or exc
    if isinstance(exc, IgnoreRequest):
        # A body that inflates past DOWNLOAD_MAXSIZE (a decompression bomb): the host
        # answered, too much, as a body too large to download is.
        return HTTP_TOO_LARGE if isinstance(cause, _DecompressionMaxSizeExceeded) else IGNORED
    if isinstance(cause, DNSFailure):
        return cause.resolution.outcome
    if isinstance(exc, CannotResolveHostError | tx.DNSLookupError):
        return last_failure(hostname) or DNS_ERROR
    if isinstance(exc, DownloadConnectionRefusedError) or isinstance(
        cause, tx.ConnectionRefusedError
    ):
        return TCP_REFUSED
    if isinstance(cause, tx.TCPTimedOutError | tx.TimeoutError):
        return TCP_TIMEOUT
    if isinstance(exc, DownloadTimeoutError):
        return HTTP_TIMEOUT
    if isinstance(exc, DownloadCancelledError) and "max size" in str(exc):
        return HTTP_TOO_LARGE
    if isinstance(exc, DownloadFailedError) or isinstance(
        cause, tx.ConnectError | tx.ConnectionLost
    ):
        return _connection_failure(cause)
    return HTTP_ERROR


def refusal(exc: BaseException, hostname: str) -> str:
    """Why the crawl refused the address a failed request to `hostname` led to ('' when
    it did not): '10.20.0.5 is a private address, not in ALLOWED_PRIVATE_NETWORKS'."""
    cause = exc.__cause__ or exc
    if isinstance(cause, DNSFailure):
        return cause.resolution.refused
    return last_refusal(hostname)


def _connection_failure(cause: BaseException) -> str:
    """TLS_TIMEOUT or TLS_HANDSHAKE when the TLS layer is among the reasons, HTTP_TOO_LARGE
    for a head past MAX_HEADER_BYTES, HTTP_ERROR when the server answered what is no HTTP
    (it answered: no failure below HTTP), else TCP_RESET."""
    reasons = [getattr(r, "value", r) for r in getattr(cause, "reasons", [])] or [cause]
    if any(isinstance(r, HeadersTooLarge) for r in reasons):
        return HTTP_TOO_LARGE
    if any(isinstance(r, ParseError) for r in reasons):
        return HTTP_ERROR
    if any(isinstance(r, TLSHandshakeTimeout) for r in reasons):
        return TLS_TIMEOUT
    if any(isinstance(r, SSL.Error) for r in reasons):
        return TLS_HANDSHAKE
    return TCP_RESET
