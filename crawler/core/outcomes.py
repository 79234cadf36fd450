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
# workers (crawler.db.crawl.unfinished), and is put off rather than handed on.
HTTP_UNFINISHED = "HTTP_UNFINISHED"
DNS_ERROR = "DNS_ERROR"
IGNORED = "IGNORED"
# The name resolved (or a URL named) an address that is not public (crawler.core.addresses).
ADDRESS_REFUSED = "ADDRESS_REFUSED"
# --- Outcomes named for what happened (issue 51, item 4; docs/crawl.md, "Outcomes") ---
# The host answered, with what is no page: the HTTP layer, no network failure, no trap.
# A redirect to a URL the same fetch was already at (seen at its first repeat).
HTTP_REDIRECT_LOOP = "HTTP_REDIRECT_LOOP"
# More redirects in a row than REDIRECT_MAX_TIMES, none of them a repeat.
HTTP_TOO_MANY_REDIRECTS = "HTTP_TOO_MANY_REDIRECTS"
# A status that is no page and no redirect to follow: outside 100-599 (99999), or a
# 1xx or a 3xx without a Location.
HTTP_BAD_STATUS = "HTTP_BAD_STATUS"
# robots.txt unreachable (a server error, or no answer within DOWNLOAD_TIMEOUT after the
# connection was made): RFC 9309 2.3.1.4, complete disallow; its page is not asked for.
HTTP_ROBOTS_UNREACHABLE = "HTTP_ROBOTS_UNREACHABLE"
# The handshake failed on the server's certificate (one past the TLS library's bound on a
# certificate chain): a TLS failure, as TLS_HANDSHAKE is.
TLS_CERTIFICATE = "TLS_CERTIFICATE"
HTTP_ANSWERS = frozenset(
    {HTTP_REDIRECT_LOOP, HTTP_TOO_MANY_REDIRECTS, HTTP_BAD_STATUS, HTTP_ROBOTS_UNREACHABLE}
)
# What each of them means, in the host page's words.
MEANINGS = {
    HTTP_REDIRECT_LOOP: "its redirects went round: stopped at the first URL asked twice",
    HTTP_TOO_MANY_REDIRECTS: "more redirects in a row than REDIRECT_MAX_TIMES",
    HTTP_BAD_STATUS: "it answered a status that is no page and no redirect (such as 99999)",
    HTTP_ROBOTS_UNREACHABLE: (
        "its robots.txt timed out or answered a server error: complete disallow"
        " (RFC 9309), the page not asked for; tried again after ROBOTS_UNREACHABLE_RETRY_AFTER"
    ),
    TLS_CERTIFICATE: "the TLS handshake failed on its certificate (too large to read)",
    # A DNS answer is an answer: NXDOMAIN says the name does not exist, which is not our
    # resolver failing to answer (that is DNS_TIMEOUT).
    DNS_NXDOMAIN: "the name does not exist (the DNS answered NXDOMAIN)",
    DNS_NOANSWER: "the name exists but has no address",
    DNS_SERVFAIL: "the name's DNS servers could not answer (SERVFAIL)",
    DNS_REFUSED: "a DNS server refused the lookup",
    DNS_TIMEOUT: "no DNS answer in time: the resolver, or the name's servers, did not answer",
}

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
        TLS_CERTIFICATE,
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
    NETWORK_FAILURES
    | ALIVE
    | HTTP_ANSWERS
    | {HTTP_TIMEOUT, HTTP_ERROR, HTTP_TOO_LARGE, HTTP_UNFINISHED, IGNORED}
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


def told_over_the_fallback(https_outcome: str | None, outcome: str) -> str:
    """The outcome of a host whose plain-HTTP fallback failed with `outcome`: the https
    try's when it failed at TLS and the fallback below HTTP. The host listens for TLS, and
    TLS is what failed (a certificate the TLS library would not read); the fallback's
    refused or reset connection would name what was never the host's way in."""
    tls_failed = https_outcome is not None and layer_of(https_outcome) == "TLS"
    return https_outcome if tls_failed and is_network_failure(outcome) else outcome


# The largest status the hosts table keeps (a SMALLINT): a status past it (99999) is
# named by the outcome, HTTP_BAD_STATUS, and not stored.
MAX_STORED_STATUS = 32767


def status_of(exc: BaseException) -> int | None:
    """The status of the response a failure came with (HttpError), when it fits."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status", None)
    return status if isinstance(status, int) and 0 < status <= MAX_STORED_STATUS else None
