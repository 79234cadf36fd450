"""Everything a response reveals: the (url, place) pairs of each source, through the filter.

The body (parsed once), the response headers, the redirect hops, the TLS
certificate the host presented, the CNAME chains the resolver followed and the
robots.txt `Sitemap:` lines all become (url, place) pairs here; the core's
`filter_found` then reads every one through the same door. A source group turned
off by DISCOVERY_SOURCES is not even gathered. A redirect response's own body and
headers are kept by RedirectHopSources before Scrapy follows the hop, and read
against the hop's own URL.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import urlsplit

from cryptography import x509
from scrapy.http import Response, TextResponse

from crawler.core.denylist import DenyList
from crawler.core.hostnames import normalize_or_none
from crawler.core.links import FilteredLinks, filter_found
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
from crawler.resolver import cname_chain

log = logging.getLogger(__name__)

MAX_TITLE = 500
SITEMAPS = "hostcrawl_sitemaps"  # request meta: robots.txt Sitemap: URLs of the host
HOPS = "hostcrawl_hops"  # request meta: per redirect hop, (its URL, its urls, its base)
SOURCE_HEADERS = (b"Link", b"Content-Security-Policy", b"Content-Security-Policy-Report-Only")
REFRESH = b"Refresh"
DOCUMENT_GROUPS = frozenset({LINKS, RESOURCES, METADATA, SCRIPTS})


def discover(
    response: Response,
    hostname: str,
    denylist: DenyList,
    groups: frozenset[str],
    local: frozenset[str] | None = None,
) -> tuple[FilteredLinks, str | None]:
    """The hostnames the fetch of `hostname`'s page revealed (the page, and each redirect
    hop's own response) that can exist (names under `local`, None: LOCAL_SUFFIXES, too),
    after the deny list, and the page's title."""
    page, title = response_found(response, groups)
    links = _filtered(response.url, hostname, page, denylist, groups, local)
    for url, urls, base in response.meta.get(HOPS) or ():
        links.merge(_filtered(url, hostname, PageUrls(urls, base), denylist, groups, local))
    return links, title


def _filtered(url: str, hostname: str, page: PageUrls, denylist, groups, local) -> FilteredLinks:
    """Relative URLs resolve against the response's own URL (after any redirect)."""
    parts = urlsplit(url)
    host = normalize_or_none(parts.hostname or "") or hostname
    return filter_found(page.urls, host, denylist, parts.scheme, page.base, groups, local)


class RedirectHopSources:
    """A downloader middleware below RedirectMiddleware: a redirect response's own
    body and headers are sources too, kept in the request's meta for the page's parse."""

    HOP_GROUPS = frozenset({LINKS, RESOURCES, METADATA, SCRIPTS, HEADERS, CERTIFICATE})

    def __init__(self, groups: frozenset[str]) -> None:
        self.groups = groups & self.HOP_GROUPS

    @classmethod
    def from_crawler(cls, crawler):
        return cls(parse_groups(crawler.settings.get("DISCOVERY_SOURCES")))

    def process_response(self, request, response):
        if (
            self.groups
            and 300 <= response.status < 400
            and b"Location" in response.headers
            and request.meta.get("hostcrawl_hostname")
        ):
            page, _ = response_found(response, self.groups)
            if page.urls:
                request.meta.setdefault(HOPS, []).append((response.url, page.urls, page.base))
        return response


def response_found(response: Response, groups: frozenset[str]) -> tuple[PageUrls, str | None]:
    """Every (url, place) the response offers in `groups`, the page's `<base href>`, its title."""
    root = None
    if isinstance(response, TextResponse):
        try:
            root = parse_document(response.text)
        except ValueError:  # a body that does not decode
            root = None
    page = document_urls(root) if groups & DOCUMENT_GROUPS else PageUrls()
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
