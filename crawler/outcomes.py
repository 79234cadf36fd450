"""Outcome types: what one request to a host came to (DESIGN.md 'outcome')."""

from __future__ import annotations

OK = "OK"
DNS_ALIVE = "DNS_ALIVE"
DNS_NXDOMAIN = "DNS_NXDOMAIN"
DNS_SERVFAIL = "DNS_SERVFAIL"
DNS_NOANSWER = "DNS_NOANSWER"
DNS_TIMEOUT = "DNS_TIMEOUT"
DNS_REFUSED = "DNS_REFUSED"
TCP_REFUSED = "TCP_REFUSED"
TCP_TIMEOUT = "TCP_TIMEOUT"
TCP_RESET = "TCP_RESET"
TLS_HANDSHAKE = "TLS_HANDSHAKE"
TLS_TIMEOUT = "TLS_TIMEOUT"
HTTP_TIMEOUT = "HTTP_TIMEOUT"
HTTP_ERROR = "HTTP_ERROR"
HTTP_TOO_LARGE = "HTTP_TOO_LARGE"
DNS_ERROR = "DNS_ERROR"
IGNORED = "IGNORED"

# Failures below HTTP: the host name leads nowhere. Only these count towards a trap.
NETWORK_FAILURES = frozenset(
    {
        DNS_NXDOMAIN,
        DNS_SERVFAIL,
        DNS_NOANSWER,
        DNS_TIMEOUT,
        DNS_REFUSED,
        DNS_ERROR,
        TCP_REFUSED,
        TCP_TIMEOUT,
        TCP_RESET,
        TLS_HANDSHAKE,
        TLS_TIMEOUT,
    }
)
ALIVE = frozenset({OK, DNS_ALIVE})
ALL = NETWORK_FAILURES | ALIVE | {HTTP_TIMEOUT, HTTP_ERROR, HTTP_TOO_LARGE, IGNORED}


def is_network_failure(outcome: str) -> bool:
    return outcome in NETWORK_FAILURES


def classify(exc: BaseException, hostname: str) -> str:
    """The outcome type of a failed request to `hostname`.

    Scrapy wraps Twisted's errors (CannotResolveHostError, DownloadFailedError…);
    the original is in __cause__, and a TLS error hides in its `reasons`.
    """
    from scrapy.exceptions import (
        CannotResolveHostError,
        DownloadCancelledError,
        DownloadConnectionRefusedError,
        DownloadFailedError,
        DownloadTimeoutError,
        IgnoreRequest,
    )
    from twisted.internet import error as tx

    from crawler.resolver import DNSFailure, last_failure

    cause = exc.__cause__ or exc
    if isinstance(exc, IgnoreRequest):
        return IGNORED
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


def _connection_failure(cause: BaseException) -> str:
    """TLS_HANDSHAKE when OpenSSL is among the reasons, else TCP_RESET."""
    from OpenSSL import SSL

    reasons = [getattr(r, "value", r) for r in getattr(cause, "reasons", [])] or [cause]
    if any(isinstance(r, SSL.Error) for r in reasons):
        return TLS_HANDSHAKE
    return TCP_RESET
