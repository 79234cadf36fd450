"""Outcome types: what one request to a host came to (docs/design.md, "outcome"). Pure.

The kinds live here, in the core; the resolver reports them and
`crawler.network.failures` tells them from Scrapy's and Twisted's exceptions.
"""

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
# Claimed again after two leases ran out with the host in flight: it froze or killed its
# workers (crawler.db.unfinished), and is put off rather than handed on.
HTTP_UNFINISHED = "HTTP_UNFINISHED"
DNS_ERROR = "DNS_ERROR"
IGNORED = "IGNORED"
# The name resolved (or a URL named) an address that is not public (crawler.core.addresses).
ADDRESS_REFUSED = "ADDRESS_REFUSED"

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
        # Decided by the name's DNS data, as NXDOMAIN is: a root whose every name points
        # inside (a wildcard to 127.0.0.1) leads nowhere on the web, a trap like any other.
        ADDRESS_REFUSED,
    }
)
# Refused by our own rules before anything was sent: says nothing of whether the world
# answers us (never held back as our outage; settled at once).
REFUSED_BY_US = frozenset({ADDRESS_REFUSED})
ALIVE = frozenset({OK, DNS_ALIVE})
ALL = (
    NETWORK_FAILURES | ALIVE | {HTTP_TIMEOUT, HTTP_ERROR, HTTP_TOO_LARGE, HTTP_UNFINISHED, IGNORED}
)


def is_network_failure(outcome: str) -> bool:
    return outcome in NETWORK_FAILURES


def outcome_group(outcome: str | None) -> str | None:
    """The dashboard timeline's group of an outcome: OK, HTTP, NETWORK or IGNORED."""
    if outcome is None:
        return None
    if outcome in ALIVE:
        return "OK"
    if outcome.startswith("HTTP"):
        return "HTTP"
    return "IGNORED" if outcome == IGNORED else "NETWORK"


def counts_as_failed(outcome: str | None) -> bool:
    """A crawled host that failed (the roots' `failed` count): neither alive nor ignored."""
    return outcome is not None and outcome not in ALIVE and outcome != IGNORED


# The layers a failure happened at, bottom up (the dashboard's health row counts each);
# ADDRESS: the name's DNS data pointed off the public web.
LAYERS = ("DNS", "ADDRESS", "TCP", "TLS", "HTTP")


def layer_of(outcome: str | None) -> str | None:
    """The layer a failed outcome failed at (its prefix: DNS_TIMEOUT is DNS), or None
    for an answer (OK, DNS_ALIVE), a denied host (IGNORED) or no outcome."""
    if outcome is None or outcome in ALIVE or outcome == IGNORED:
        return None
    return outcome.partition("_")[0]
