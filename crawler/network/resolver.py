"""A DNS resolver that knows why a lookup failed (docs/design.md, "Scrapy facts").

Scrapy's built-in resolvers turn NXDOMAIN, SERVFAIL and a timeout alike into
CannotResolveHostError. This one, on twisted.names, keeps the real kind: the
trap rule and the audit need it. It caches answers by TTL and NXDOMAIN by the
zone's SOA minimum, so a trap costs one lookup per junk name.

Lookups do not queue behind each other: each is its own query on its own UDP socket
(twisted.names asks every query from a fresh port), as many at once as there are hosts
resolving; the same name asked twice at once is asked once. DnsFigures counts what a
crawl's hosts got from it: the lookups in flight (now and at the peak), the questions
asked, the cache's hits, and how long a host waited for its address (the in-flight
control writes them to the stats, `hostcrawl/dns/...`).
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from twisted.internet import defer
from twisted.internet.abstract import isIPAddress, isIPv6Address
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from twisted.names import client, dns
from twisted.names import error as dns_error
from zope.interface import implementer

from crawler.core.addresses import Network, address_refusal, parse_networks, refused_words
from crawler.core.outcomes import (
    ADDRESS_REFUSED,
    DNS_ALIVE,
    DNS_ERROR,
    DNS_NOANSWER,
    DNS_NXDOMAIN,
    DNS_REFUSED,
    DNS_SERVFAIL,
    DNS_TIMEOUT,
)
from crawler.network.dns_figures import DnsFigures

log = logging.getLogger(__name__)

MAX_CNAME_HOPS = 8
# Bytes of a UDP answer read: all a datagram can hold. twisted.names reads 8 KB, and an
# answer cut there (a CNAME chain past it) parsed as a shorter one whose last CNAME, a
# hop in the chain's middle, was asked for next: the outcome named what that name got
# (NXDOMAIN, a timeout), not what the server answered.
UDP_READ_BYTES = 65535
NEGATIVE_TTL_CAP = 3600
# Kinds a lookup may be retried for; NXDOMAIN and NOANSWER are answers.
TRANSIENT = frozenset({DNS_SERVFAIL, DNS_TIMEOUT, DNS_REFUSED})


@dataclass(frozen=True)
class Resolution:
    """One lookup's outcome: DNS_ALIVE with an address, or a failure kind."""

    hostname: str
    outcome: str
    address: str | None = None
    ttl: int = 0
    # The canonical names the lookup went through (CNAME targets), in order.
    cnames: tuple[str, ...] = ()
    # ADDRESS_REFUSED: the address refused and why ('10.20.0.5 is a private address, not
    # in ALLOWED_PRIVATE_NETWORKS'), for the log.
    refused: str = ""


class DNSFailure(DNSLookupError):
    """A failed lookup that keeps its kind (a DNSLookupError, as Twisted expects)."""

    def __init__(self, resolution: Resolution) -> None:
        why = f" ({resolution.refused})" if resolution.refused else ""
        super().__init__(f"{resolution.hostname}: {resolution.outcome}{why}")
        self.resolution = resolution


class _Cache:
    """A small LRU of resolutions with expiry times."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[float, Resolution]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, name: str) -> Resolution | None:
        item = self._items.get(name)
        if item is None:
            return None
        expires, resolution = item
        if expires < time.monotonic():
            del self._items[name]
            return None
        self._items.move_to_end(name)
        return resolution

    def put(self, resolution: Resolution) -> None:
        if self.size <= 0 or resolution.ttl <= 0:
            return
        self._items[resolution.hostname] = (time.monotonic() + resolution.ttl, resolution)
        self._items.move_to_end(resolution.hostname)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


# The latest failure per name, so a CannotResolveHostError (which carries no
# kind) can be classified exactly. Bounded like the cache.
_failures: OrderedDict[str, str] = OrderedDict()
_FAILURES_KEPT = 100_000


# The CNAME chain of each name looked up lately (a source of hostnames), bounded alike.
_chains: OrderedDict[str, tuple[str, ...]] = OrderedDict()


def cname_chain(hostname: str) -> tuple[str, ...]:
    """The CNAME targets the last lookup of `hostname` in this process went through."""
    return _chains.get(hostname.lower().rstrip("."), ())


def _remember_chain(resolution: Resolution) -> None:
    if not resolution.cnames:
        _chains.pop(resolution.hostname, None)
        return
    _keep(_chains, resolution.hostname, resolution.cnames)


def _keep(kept: OrderedDict, hostname: str, value) -> None:
    """`value` for `hostname`, the newest last; at most _FAILURES_KEPT names are kept."""
    kept[hostname] = value
    kept.move_to_end(hostname)
    if len(kept) > _FAILURES_KEPT:
        kept.popitem(last=False)


def last_failure(hostname: str) -> str | None:
    """The kind of the last failed lookup of `hostname` in this process, if any."""
    return _failures.get(hostname)


# Why the last address of each name refused lately was refused, bounded alike.
_refusals: OrderedDict[str, str] = OrderedDict()


def last_refusal(hostname: str) -> str:
    """Why the last address `hostname` resolved to in this process was refused ('' if
    it was not): the address and the setting."""
    return _refusals.get(hostname, "")


# Who hears of each name a server resolved: the crawl's world check (crawler.rules.evidence),
# which needs no canary while our resolver is seen answering.
answered_listeners: list[Callable[[str], None]] = []


def _remember(resolution: Resolution) -> None:
    if resolution.outcome == DNS_ALIVE:
        _failures.pop(resolution.hostname, None)
        _refusals.pop(resolution.hostname, None)
        for listener in answered_listeners:
            listener(resolution.hostname)
        return
    _keep(_failures, resolution.hostname, resolution.outcome)
    if not resolution.refused:
        _refusals.pop(resolution.hostname, None)
        return
    _keep(_refusals, resolution.hostname, resolution.refused)


def parse_nameservers(value: str | list | None) -> list[tuple[str, int]]:
    """'127.0.0.1:5353,10.0.0.1' → [('127.0.0.1', 5353), ('10.0.0.1', 53)]."""
    if not value:
        return []
    items = value.split(",") if isinstance(value, str) else value
    servers = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        host, _, port = item.rpartition(":") if item.count(":") == 1 else (item, "", "53")
        try:
            servers.append((host, int(port)))
        except ValueError:
            raise ValueError(f"DNS_NAMESERVERS: bad server {item!r} (want host:port)") from None
    return servers


class WholeAnswerResolver(client.Resolver):
    """twisted.names' resolver, reading each UDP answer whole (UDP_READ_BYTES)."""

    def _connectedProtocol(self, interface: str = ""):  # noqa: N802 (Twisted's name)
        protocol = super()._connectedProtocol(interface)
        # The port reads each datagram into maxPacketSize bytes (twisted udp.Port.doRead).
        protocol.transport.maxPacketSize = UDP_READ_BYTES
        return protocol


@implementer(IResolverSimple)
class OutcomeResolver:
    """TWISTED_DNS_RESOLVER: IPv4 lookups through twisted.names, failures with their kind."""

    def __init__(
        self,
        reactor,
        nameservers: list[tuple[str, int]] | None = None,
        timeout: float = 5.0,
        cache_size: int = 100_000,
        allowed: tuple[Network, ...] = (),
    ) -> None:
        self.reactor = reactor
        # Private networks the crawl may connect to (ALLOWED_PRIVATE_NETWORKS).
        self.allowed = allowed
        self.nameservers = nameservers or []
        self.timeout = timeout
        self.attempts = (timeout, timeout)
        self._cache = _Cache(cache_size)
        self.figures = DnsFigures()
        if nameservers:
            self._client = WholeAnswerResolver(servers=nameservers, reactor=reactor)
        else:
            self._client = WholeAnswerResolver(resolv="/etc/resolv.conf", reactor=reactor)

    @classmethod
    def from_crawler(cls, crawler, reactor):
        return cls.from_settings(crawler.settings, reactor)

    @classmethod
    def from_settings(cls, settings, reactor):
        return cls(
            reactor,
            parse_nameservers(settings.get("DNS_NAMESERVERS")),
            settings.getfloat("DNS_TIMEOUT"),
            settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0,
            parse_networks(settings.get("ALLOWED_PRIVATE_NETWORKS") or ""),
        )

    def cached(self) -> int:
        """How many answers the cache holds now."""
        return len(self._cache)

    def same_as(self, other: OutcomeResolver) -> bool:
        """Asks the same servers with the same timeout, and lets the same networks through."""
        mine = (self.nameservers, self.timeout, self.allowed)
        return mine == (other.nameservers, other.timeout, other.allowed)

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout=()) -> defer.Deferred:  # noqa: N802 (Twisted API)
        """IResolverSimple: a public address, or a DNSFailure carrying the kind.

        Every connection the crawl makes asks here (each redirect hop, robots.txt), so
        an address that is not public (ADDRESS_REFUSED) is refused here, after DNS."""
        if isIPAddress(name) or isIPv6Address(name):
            # Named as the crawl names it (crawler.core.hostnames), so that the failure is
            # found again by last_failure() once Twisted has wrapped it.
            literal = Resolution(ipaddress.ip_address(name).compressed, DNS_ALIVE, name)
            return defer.maybeDeferred(_address_or_failure, self.public(literal))
        asked = time.monotonic()
        resolved = self.resolve(name).addCallback(self.public)
        resolved.addCallback(self._waited, asked)
        return resolved.addCallback(_address_or_failure)

    def _waited(self, resolution: Resolution, asked: float) -> Resolution:
        self.figures.waited(time.monotonic() - asked)
        return resolution

    def public(self, resolution: Resolution) -> Resolution:
        """`resolution`, or ADDRESS_REFUSED when its address is not a public one."""
        if resolution.address is None:
            return resolution
        kind = address_refusal(resolution.address, self.allowed)
        if not kind:
            return resolution
        words = refused_words(resolution.address, kind)
        refused = replace(resolution, outcome=ADDRESS_REFUSED, address=None, refused=words)
        _remember(refused)
        return refused

    def resolve(self, name: str, fresh: bool = False) -> defer.Deferred:
        """Deferred[Resolution]; never fails. `fresh` asks the server, not the cache."""
        name = name.lower().rstrip(".")
        cached = None if fresh else self._cache.get(name)
        if cached is not None:
            self.figures.cache_hits += 1
            return defer.succeed(cached)
        return defer.Deferred.fromCoroutine(self._resolve(name))

    async def _resolve(self, name: str) -> Resolution:
        self.figures.asked()
        try:
            return await self._resolve_counted(name)
        finally:
            self.figures.answered()

    async def _resolve_counted(self, name: str) -> Resolution:
        try:
            resolution = await self._lookup(name, name, MAX_CNAME_HOPS)
        except (UnicodeError, ValueError) as exc:
            # An answer twisted.names cannot read (a CNAME label of bytes that are no
            # ASCII): the name leads nowhere we can go, and one hostile zone must not
            # print a traceback a lookup.
            log.debug("DNS answer for %s unreadable: %s", name, exc)
            resolution = Resolution(name, DNS_ERROR)
        self._cache.put(resolution)
        _remember(resolution)
        _remember_chain(resolution)
        return resolution

    async def _lookup(
        self, hostname: str, query: str, hops: int, chain: tuple[str, ...] = ()
    ) -> Resolution:
        try:
            # Asked twice: a silent server gets one retry, then it is a DNS_TIMEOUT.
            answers, authority, _ = await self._client.lookupAddress(query, self.attempts)
        except dns_error.DNSNameError as exc:
            return Resolution(hostname, DNS_NXDOMAIN, ttl=_negative_ttl(exc))
        except (dns_error.DNSServerError, dns_error.DNSFormatError):
            return Resolution(hostname, DNS_SERVFAIL)
        except dns_error.DNSQueryRefusedError:
            return Resolution(hostname, DNS_REFUSED)
        except (defer.TimeoutError, dns_error.DNSQueryTimeoutError, OSError):
            return Resolution(hostname, DNS_TIMEOUT)
        except dns_error.DomainError:
            return Resolution(hostname, DNS_SERVFAIL)
        return await self._from_answers(hostname, answers, authority, hops, chain)

    async def _from_answers(self, hostname, answers, authority, hops, chain) -> Resolution:
        # A recursive server answers with the whole chain: its CNAMEs, then the A records.
        chain += tuple(str(r.payload.name) for r in answers if r.type == dns.CNAME)
        for record in answers:
            if record.type == dns.A:
                address = record.payload.dottedQuad()
                return Resolution(hostname, DNS_ALIVE, address, record.ttl, chain)
        if chain and hops > 0:  # only the CNAME came back: ask for its target
            return await self._lookup(hostname, chain[-1], hops - 1, chain)
        return Resolution(hostname, DNS_NOANSWER, ttl=_soa_minimum(authority), cnames=chain)


def _address_or_failure(resolution: Resolution):
    if resolution.address is None:
        raise DNSFailure(resolution)
    return resolution.address


def _negative_ttl(exc: Exception) -> int:
    message = exc.args[0] if exc.args else None
    return _soa_minimum(getattr(message, "authority", []))


def _soa_minimum(authority) -> int:
    """RFC 2308: a negative answer lives min(SOA TTL, SOA minimum) seconds."""
    for record in authority:
        if record.type == dns.SOA:
            return min(record.ttl, record.payload.minimum, NEGATIVE_TTL_CAP)
    return 0
