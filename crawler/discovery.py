"""Everything a response reveals: the (url, place) pairs of each source, for the link filter.

The body (parsed once), the response headers, the redirect hops, the TLS
certificate the host presented, the CNAME chains the resolver followed and the
robots.txt `Sitemap:` lines all become (url, place) pairs here; the core's
`filter_found` then reads every one through the same door. A source group turned
off by DISCOVERY_SOURCES is not even gathered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from cryptography import x509
from scrapy.http import Response, TextResponse

from crawler.core.hostnames import normalize_or_none
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
    SITEMAP,
    header_urls,
    name_urls,
)
from crawler.resolver import cname_chain

log = logging.getLogger(__name__)

MAX_TITLE = 500
SITEMAPS = "hostcrawl_sitemaps"  # request meta: robots.txt Sitemap: URLs of the host
SOURCE_HEADERS = (b"Link", b"Content-Security-Policy", b"Content-Security-Policy-Report-Only")
REFRESH = b"Refresh"
DOCUMENT_GROUPS = frozenset({LINKS, RESOURCES, METADATA})


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
