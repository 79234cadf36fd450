"""Everything a response reveals: the (url, place) pairs of each source, through the filter.

The body (parsed once), the response headers, the redirect hops, the TLS
certificate the host presented, the CNAME chains the resolver followed and the
robots.txt `Sitemap:` lines are taken from the response as plain values
(`crawler.core.reading.ResponseParts`) and read there into names; the core's
`Judge` then asks the deny list and the caps of each. A source group turned
off by DISCOVERY_SOURCES is not even gathered. A redirect response's own body and
headers are read by RedirectHopSources before Scrapy follows the hop, against the
hop's own URL, and its names kept for the page's parse.

One host's fetch (every hop and the page) shares its FetchLimits: at most
MAX_NAMES_PER_PAGE new names, MAX_NAMES_PER_ROOT_PER_PAGE of them under one root
(crawler.core.namecaps), and MAX_EXTRACT_SECONDS of reading (crawler.core.budget).

A heavy response (what is read of it over HEAVY_BYTES: a page, its headers, its
robots.txt's Sitemap: lines or its certificate naming thousands of names) is read in
the reader process (crawler/network/reader.py), one at a time, and its names judged
JUDGED_AT_ONCE at a time: the event loop, and every other host of the worker, go on."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

from scrapy.http import Response, TextResponse

from crawler.core.budget import ExtractBudget
from crawler.core.denylist import DenyList
from crawler.core.hostnames import allowed_private_networks, local_suffixes, normalize_or_none
from crawler.core.links import FilteredLinks, Judge, unpacked
from crawler.core.namecaps import NameCaps
from crawler.core.reading import ResponseParts, read_packed, read_parts
from crawler.core.sources import (
    CERTIFICATE,
    DNS,
    HEADERS,
    LINKS,
    METADATA,
    REDIRECTS,
    RESOURCES,
    ROBOTS,
    SCRIPTS,
    parse_groups,
)
from crawler.network.reader import HEAVY_BYTES, READ_OFF_LOOP_STAT, ReaderLost, read_off_loop
from crawler.network.resolver import cname_chain
from crawler.shared import CrawlShared

log = logging.getLogger(__name__)

SITEMAPS = "hostcrawl_sitemaps"  # request meta: robots.txt Sitemap: URLs of the host
HOPS = "hostcrawl_hops"  # request meta: per redirect hop, the FilteredLinks it revealed
LIMITS = "hostcrawl_limits"  # request meta: the FetchLimits of the host's fetch
SOURCE_HEADERS = (b"Link", b"Content-Security-Policy", b"Content-Security-Policy-Report-Only")
REFRESH = b"Refresh"
# Names of a heavy response judged against the deny list and the caps between two turns
# of the loop: some milliseconds of work.
JUDGED_AT_ONCE = 2_000


@dataclass
class FetchLimits:
    """What one host's fetch may still save and spend, shared by its hops and its page."""

    caps: NameCaps
    budget: ExtractBudget


@dataclass(frozen=True)
class LimitSettings:
    """MAX_NAMES_PER_PAGE, MAX_NAMES_PER_ROOT_PER_PAGE and MAX_EXTRACT_SECONDS."""

    names: int
    names_per_root: int
    seconds: float

    @classmethod
    def of(cls, settings) -> LimitSettings:
        return cls(
            settings.getint("MAX_NAMES_PER_PAGE"),
            settings.getint("MAX_NAMES_PER_ROOT_PER_PAGE"),
            settings.getfloat("MAX_EXTRACT_SECONDS"),
        )

    def of_fetch(self, meta: dict, hostname: str) -> FetchLimits:
        """The limits of the fetch whose request `meta` is (made by its first response;
        a redirect's request carries them on)."""
        limits = meta.get(LIMITS)
        if limits is None:
            # The worker's own CPU time: a busy machine does not spend a response's budget.
            budget = ExtractBudget(self.seconds, time.thread_time)
            caps = NameCaps(self.names, self.names_per_root, own=hostname)
            limits = meta[LIMITS] = FetchLimits(caps, budget)
        return limits


def discover(
    response: Response,
    hostname: str,
    denylist: DenyList,
    groups: frozenset[str],
    local: frozenset[str] | None = None,
    limits: FetchLimits | None = None,
    parts: ResponseParts | None = None,
) -> tuple[FilteredLinks, str | None]:
    """The hostnames the fetch of `hostname`'s page revealed (the page, and each redirect
    hop's own response) that can exist (names under `local`, None: LOCAL_SUFFIXES, too),
    after the deny list and within `limits` (None: none), `hostname` itself left out;
    and the page's title. Read in the loop, at once: for a heavy page, discover_paced.
    `parts`: the response's, if taken already."""
    parts = parts if parts is not None else parts_of(response, groups)
    links, title = read_response(parts, hostname, denylist, groups, local, limits)
    return with_hops(links, response, hostname), title


async def discover_paced(
    response: Response,
    parts: ResponseParts,
    hostname: str,
    denylist: DenyList,
    groups: frozenset[str],
    local: frozenset[str] | None = None,
    limits: FetchLimits | None = None,
) -> tuple[FilteredLinks, str | None]:
    """discover() for a heavy page (its `parts`): read in the reader process, its names
    judged a step at a time."""
    links, title = await read_paced(parts, hostname, denylist, groups, local, limits)
    return with_hops(links, response, hostname), title


def with_hops(links: FilteredLinks, response: Response, hostname: str) -> FilteredLinks:
    for hop in response.meta.get(HOPS) or ():
        links = links.merged(hop)
    return links.without(hostname)


def read_response(parts, hostname, denylist, groups, local, limits):
    """One response's filtered links and title, read in the loop; its reading counts
    against `limits`."""
    budget = limits.budget if limits is not None else None
    reading = read_parts(parts, hostname, groups, *_rules(local), budget)
    judge = Judge(reading.gathered, denylist, limits.caps if limits is not None else None)
    judge.add(reading.gathered.names.items())
    return judge.links(), reading.title


async def read_paced(parts, hostname, denylist, groups, local, limits):
    """read_response() for a heavy response: read in the reader process (the fetch's
    budget counted in its CPU time, and carried back), its names judged against the deny
    list and the caps JUDGED_AT_ONCE at a time, the loop running between two steps. If
    the reader process is lost, the response is read in the loop."""
    budget = limits.budget if limits is not None else None
    try:
        args = (parts, hostname, groups, *_rules(local), budget)
        reading, names = await read_off_loop(read_packed, *args)
    except ReaderLost:
        log.warning("the reader process was lost; %s is read in the loop", parts.url)
        return read_response(parts, hostname, denylist, groups, local, limits)
    if budget is not None and reading.budget is not None:
        budget.used, budget.stopped = reading.budget.used, reading.budget.stopped
    judge = Judge(reading.gathered, denylist, limits.caps if limits is not None else None)
    names = unpacked(names)
    while judge.add(itertools.islice(names, JUDGED_AT_ONCE)):
        await asyncio.sleep(0)
    return judge.links(), reading.title


def _rules(local: frozenset[str] | None) -> tuple[frozenset[str], tuple]:
    """LOCAL_SUFFIXES (`local`, None: this process's) and ALLOWED_PRIVATE_NETWORKS, as
    values: the reader process does not read this process's settings."""
    return (local if local is not None else local_suffixes()), allowed_private_networks()


def heavy(parts: ResponseParts) -> bool:
    """Reading `parts` goes through more than HEAVY_BYTES."""
    return parts.size() > HEAVY_BYTES


def parts_of(response: Response, groups: frozenset[str]) -> ResponseParts:
    """What the response offers in `groups` (and its text, for the title), as values."""
    text = None
    if isinstance(response, TextResponse):
        try:
            text = response.text
        except ValueError:  # a body that does not decode
            text = None
    return ResponseParts(
        response.url,
        text,
        tuple(_source_headers(response)) if HEADERS in groups else (),
        tuple(redirect_targets(response)) if REDIRECTS in groups else (),
        _certificate(response) if CERTIFICATE in groups else None,
        _cnames(response) if DNS in groups else (),
        "\n".join(response.meta.get(SITEMAPS) or ()) if ROBOTS in groups else "",
    )


class RedirectHopSources:
    """A downloader middleware below RedirectMiddleware: a redirect response's own
    body and headers are sources too, read within the fetch's limits; their names are
    kept in the request's meta for the page's parse."""

    HOP_GROUPS = frozenset({LINKS, RESOURCES, METADATA, SCRIPTS, HEADERS, CERTIFICATE})

    def __init__(self, crawler, groups: frozenset[str]) -> None:
        self.crawler = crawler
        self.groups = groups & self.HOP_GROUPS
        self.limits = LimitSettings.of(crawler.settings)
        self.local = local_suffixes(crawler.settings.get("LOCAL_SUFFIXES"))

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler, parse_groups(crawler.settings.get("DISCOVERY_SOURCES")))

    def process_response(self, request, response):
        hostname = request.meta.get("hostcrawl_hostname")
        if (
            self.groups
            and 300 <= response.status < 400
            and b"Location" in response.headers
            and hostname
        ):
            denylist = CrawlShared.of(self.crawler).denylist.loaded
            limits = self.limits.of_fetch(request.meta, hostname)
            args = (parts_of(response, self.groups), hostname, denylist, self.groups, self.local)
            if heavy(args[0]):
                return self._kept_paced(request, response, args, limits)
            self._keep(request, read_response(*args, limits)[0])
        return response

    async def _kept_paced(self, request, response, args, limits) -> Response:
        self.crawler.stats.inc_value(READ_OFF_LOOP_STAT)
        self._keep(request, (await read_paced(*args, limits))[0])
        return response

    @staticmethod
    def _keep(request, links: FilteredLinks) -> None:
        if links.found:
            request.meta.setdefault(HOPS, []).append(links)


def _source_headers(response: Response) -> Iterator[tuple[str, str]]:
    headers = response.headers
    for name in (*SOURCE_HEADERS, REFRESH):
        for value in headers.getlist(name):
            yield name.decode(), value.decode("latin-1")


def redirect_targets(response: Response) -> list[str]:
    """Each redirect hop's target (its Location, resolved): every URL after the first."""
    hops = response.meta.get("redirect_urls") or []
    return [*hops[1:], response.url] if hops else []


def _cnames(response: Response) -> tuple[str, ...]:
    """The names of the CNAME chains the resolver followed for the response's hosts."""
    return tuple(name for host in _hosts_looked_up(response) for name in cname_chain(host))


def _hosts_looked_up(response: Response) -> set[str]:
    """The hosts of the request and its redirect hops (each had its own lookup)."""
    urls = [*(response.meta.get("redirect_urls") or ()), response.url]
    hosts = set()
    for url in urls:
        host = normalize_or_none(url)
        if host:
            hosts.add(host)
    return hosts


def _certificate(response: Response) -> bytes | None:
    """The certificate the host presented (DER), if any and readable."""
    certificate = getattr(response, "certificate", None)
    if certificate is None:
        return None
    try:
        return certificate.dump()
    except (AttributeError, ValueError) as exc:  # not an X.509 certificate we can read
        log.debug("certificate of %s unreadable: %s", response.url, exc)
        return None
