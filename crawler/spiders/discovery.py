"""Everything a response reveals: the (url, place) pairs of each source, through the filter.

The body (parsed once), the response headers, the redirect hops, the TLS
certificate the host presented, the CNAME chains the resolver followed and the
robots.txt `Sitemap:` lines all become (url, place) pairs here; the core's
`filter_found` then reads every one through the same door. A source group turned
off by DISCOVERY_SOURCES is not even gathered. A redirect response's own body and
headers are read by RedirectHopSources before Scrapy follows the hop, against the
hop's own URL, and its names kept for the page's parse.

One host's fetch (every hop and the page) shares its FetchLimits: at most
MAX_NAMES_PER_PAGE new names, MAX_NAMES_PER_ROOT_PER_PAGE of them under one root
(crawler.core.namecaps), and MAX_EXTRACT_SECONDS of reading (crawler.core.budget).

A heavy response (what is read of it over HEAVY_BYTES: a page, its headers, its
robots.txt's Sitemap: lines or its certificate naming thousands of names) is read in
the reader thread (crawler/network/reader.py), one at a time, not in the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from cryptography import x509
from scrapy.http import Response, TextResponse

from crawler.core.budget import ExtractBudget
from crawler.core.denylist import DenyList
from crawler.core.hostnames import local_suffixes, normalize_or_none
from crawler.core.links import FilteredLinks, filter_found
from crawler.core.namecaps import NameCaps
from crawler.core.pagelinks import PageUrls, document_title, document_urls, parse_document
from crawler.core.sources import (
    CERTIFICATE,
    CERTIFICATE_NAME,
    CNAME,
    DNS,
    HEADERS,
    LINKS,
    METADATA,
    REDIRECT,
    REDIRECTS,
    RESOURCES,
    ROBOTS,
    SCRIPTS,
    SITEMAP,
    header_urls,
    name_urls,
    parse_groups,
)
from crawler.network.reader import HEAVY_BYTES, READ_OFF_LOOP_STAT, read_off_loop
from crawler.network.resolver import cname_chain
from crawler.shared import CrawlShared

log = logging.getLogger(__name__)

MAX_TITLE = 500
SITEMAPS = "hostcrawl_sitemaps"  # request meta: robots.txt Sitemap: URLs of the host
HOPS = "hostcrawl_hops"  # request meta: per redirect hop, the FilteredLinks it revealed
LIMITS = "hostcrawl_limits"  # request meta: the FetchLimits of the host's fetch
SOURCE_HEADERS = (b"Link", b"Content-Security-Policy", b"Content-Security-Policy-Report-Only")
REFRESH = b"Refresh"
DOCUMENT_GROUPS = frozenset({LINKS, RESOURCES, METADATA, SCRIPTS})


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
) -> tuple[FilteredLinks, str | None]:
    """The hostnames the fetch of `hostname`'s page revealed (the page, and each redirect
    hop's own response) that can exist (names under `local`, None: LOCAL_SUFFIXES, too),
    after the deny list and within `limits` (None: none), `hostname` itself left out;
    and the page's title."""
    links, title = read_response(response, hostname, denylist, groups, local, limits)
    for hop in response.meta.get(HOPS) or ():
        links = links.merged(hop)
    return links.without(hostname), title


def read_response(response, hostname, denylist, groups, local, limits):
    """One response's filtered links and title; its reading counts against `limits`."""
    budget = limits.budget if limits is not None else None
    if budget is not None:
        budget.begin()
    try:
        page, title = response_found(response, groups, budget)
        links = _filtered(response.url, hostname, page, denylist, groups, local, limits)
    finally:
        if budget is not None:
            budget.end()
    return links, title


def _filtered(url: str, hostname: str, page: PageUrls, denylist, groups, local, limits):
    """Relative URLs resolve against the response's own URL (after any redirect)."""
    parts = urlsplit(url)
    host = normalize_or_none(parts.hostname or "") or hostname
    caps, budget = (limits.caps, limits.budget) if limits is not None else (None, None)
    return filter_found(
        page.urls, host, denylist, parts.scheme, page.base, groups, local, caps, budget
    )


def heavy(response: Response, sitemaps: list[str] | tuple = ()) -> bool:
    """What reading `response` (and its robots.txt's `sitemaps`) would go through is over
    HEAVY_BYTES."""
    size = len(response.body)
    size += sum(len(value) for _, value in _source_headers(response))
    size += sum(len(url) for url in sitemaps)
    certificate = getattr(response, "certificate", None)
    if certificate is not None and size <= HEAVY_BYTES:
        # One we cannot dump is left to certificate_names, which says so.
        with contextlib.suppress(AttributeError, ValueError):
            size += len(certificate.dump())
    return size > HEAVY_BYTES


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
            args = (response, hostname, denylist, self.groups, self.local, limits)
            if heavy(response):
                return self._kept_off_loop(request, response, args)
            self._keep(request, read_response(*args)[0])
        return response

    async def _kept_off_loop(self, request, response, args) -> Response:
        self.crawler.stats.inc_value(READ_OFF_LOOP_STAT)
        self._keep(request, (await read_off_loop(read_response, *args))[0])
        return response

    @staticmethod
    def _keep(request, links: FilteredLinks) -> None:
        if links.found:
            request.meta.setdefault(HOPS, []).append(links)


def response_found(
    response: Response, groups: frozenset[str], budget: ExtractBudget | None = None
) -> tuple[PageUrls, str | None]:
    """Every (url, place) the response offers in `groups`, the page's `<base href>`, its
    title; the document's walk stops where `budget` is spent."""
    root = None
    if isinstance(response, TextResponse):
        try:
            root = parse_document(response.text)
        except ValueError:  # a body that does not decode
            root = None
    page = document_urls(root, budget) if groups & DOCUMENT_GROUPS else PageUrls()
    title = document_title(root)
    urls = page.urls
    if HEADERS in groups:
        urls.extend(header_urls(_source_headers(response)))
    if REDIRECTS in groups:
        urls.extend((url, REDIRECT) for url in redirect_targets(response))
    if CERTIFICATE in groups:
        urls.extend(name_urls(certificate_names(response), CERTIFICATE_NAME))
    if DNS in groups:
        for host in _hosts_looked_up(response):
            urls.extend(name_urls(cname_chain(host), CNAME))
    if ROBOTS in groups:
        urls.extend((url, SITEMAP) for url in response.meta.get(SITEMAPS) or ())
    return page, title[:MAX_TITLE] if title else None


def _source_headers(response: Response) -> Iterator[tuple[str, str]]:
    headers = response.headers
    for name in (*SOURCE_HEADERS, REFRESH):
        for value in headers.getlist(name):
            yield name.decode(), value.decode("latin-1")


def redirect_targets(response: Response) -> list[str]:
    """Each redirect hop's target (its Location, resolved): every URL after the first."""
    hops = response.meta.get("redirect_urls") or []
    return [*hops[1:], response.url] if hops else []


def _hosts_looked_up(response: Response) -> set[str]:
    """The hosts of the request and its redirect hops (each had its own lookup)."""
    urls = [*(response.meta.get("redirect_urls") or ()), response.url]
    hosts = set()
    for url in urls:
        host = normalize_or_none(url)
        if host:
            hosts.add(host)
    return hosts


def certificate_names(response: Response) -> list[str]:
    """The subjectAltName DNS names of the certificate the host presented, verified or not."""
    certificate = getattr(response, "certificate", None)
    if certificate is None:
        return []
    try:
        cert = certificate.original.to_cryptography()
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    except (AttributeError, ValueError) as exc:  # not an X.509 certificate we can read
        log.debug("certificate of %s unreadable: %s", response.url, exc)
        return []
    return san.value.get_values_for_type(x509.DNSName)
