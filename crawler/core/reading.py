"""One response read as far as its names, before the deny list and the caps. Pure.

What a response offers (its text, its source headers, its redirect targets, its
certificate, the CNAME chains looked up for it, its robots.txt's `Sitemap:` lines) is
taken from it once, as plain values (`ResponseParts`), and read here: the document
parsed, every (url, place) gathered, each link's name worked out
(crawler.core.links.gather_found). The Scrapy side judges the names against the deny
list and the caps (crawler.core.links.Judge). A heavy response's parts are read in the
reader process (crawler/network/reader.py), the worker's loop free meanwhile: this module
and what it imports is all that process needs, and every value here pickles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from cryptography import x509

from crawler.core.addresses import Network
from crawler.core.budget import ExtractBudget
from crawler.core.hostnames import normalize_or_none
from crawler.core.links import Gathered, gather_found, packed
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
)

MAX_TITLE = 500
DOCUMENT_GROUPS = frozenset({LINKS, RESOURCES, METADATA, SCRIPTS})


@dataclass(frozen=True)
class ResponseParts:
    """What one response offers, as plain values."""

    url: str  # the response's own URL (after any redirect): relative links resolve on it
    text: str | None = None  # the decoded body of a text response
    headers: tuple[tuple[str, str], ...] = ()  # the source headers, (name, value)
    redirects: tuple[str, ...] = ()  # each redirect hop's target
    certificate: bytes | None = None  # the certificate the host presented, DER
    cnames: tuple[str, ...] = ()  # the names of the CNAME chains looked up for it
    # Its robots.txt's Sitemap: URLs, a line each: one string pickles at once, where 60,000
    # held the worker's interpreter (the queue's feeder thread) some 50 ms.
    sitemaps: str = ""

    def size(self) -> int:
        """Characters and bytes a reading goes through."""
        return (
            len(self.text or "")
            + sum(len(value) for _, value in self.headers)
            + len(self.sitemaps)
            + len(self.certificate or b"")
        )


@dataclass
class Reading:
    """A response's names gathered (before the deny list and caps), its title, and the
    fetch's budget as the reading left it."""

    gathered: Gathered = field(default_factory=Gathered)
    title: str | None = None
    budget: ExtractBudget | None = None


def read_parts(
    parts: ResponseParts,
    hostname: str,
    groups: frozenset[str],
    local: frozenset[str],
    allowed: tuple[Network, ...],
    budget: ExtractBudget | None = None,
) -> Reading:
    """The names `parts` offer in `groups` that can exist (names under `local`, addresses
    in `allowed` too), and the title; the reading counts against `budget` (a spell)."""
    if budget is not None:
        budget.begin()
    try:
        page, title = parts_found(parts, groups, budget)
        url = urlsplit(parts.url)
        host = normalize_or_none(url.hostname or "") or hostname
        gathered = gather_found(
            page.urls, host, url.scheme, page.base, groups, local, budget, allowed
        )
    finally:
        if budget is not None:
            budget.end()
    return Reading(gathered, title, budget)


def read_packed(
    parts: ResponseParts,
    hostname: str,
    groups: frozenset[str],
    local: frozenset[str],
    allowed: tuple[Network, ...],
    budget: ExtractBudget | None = None,
) -> tuple[Reading, str]:
    """read_parts() in the reader process: the reading without its names, and its names
    packed in one string (crawler.core.links.packed)."""
    reading = read_parts(parts, hostname, groups, local, allowed, budget)
    names, reading.gathered.names = reading.gathered.names, {}
    return reading, packed(names)


def parts_found(
    parts: ResponseParts, groups: frozenset[str], budget: ExtractBudget | None = None
) -> tuple[PageUrls, str | None]:
    """Every (url, place) the parts offer in `groups`, the page's `<base href>`, its
    title; the document's walk stops where `budget` is spent."""
    root = None
    if parts.text is not None:
        try:
            root = parse_document(parts.text)
        except ValueError:  # a body lxml cannot take
            root = None
    page = document_urls(root, budget) if groups & DOCUMENT_GROUPS else PageUrls()
    title = document_title(root)
    urls = page.urls
    if HEADERS in groups:
        urls.extend(header_urls(parts.headers))
    if REDIRECTS in groups:
        urls.extend((url, REDIRECT) for url in parts.redirects)
    if CERTIFICATE in groups:
        urls.extend(name_urls(certificate_names(parts.certificate), CERTIFICATE_NAME))
    if DNS in groups:
        urls.extend(name_urls(parts.cnames, CNAME))
    if ROBOTS in groups and parts.sitemaps:
        urls.extend((url, SITEMAP) for url in parts.sitemaps.split("\n"))
    return page, title[:MAX_TITLE] if title else None


def certificate_names(der: bytes | None) -> list[str]:
    """The subjectAltName DNS names of a certificate (DER), verified or not."""
    if not der:
        return []
    try:
        cert = x509.load_der_x509_certificate(der)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    except ValueError:  # not an X.509 certificate we can read
        return []
    return san.value.get_values_for_type(x509.DNSName)


def warm() -> None:
    """Read a page of one link: what a reading needs (the parser, the bundled Public
    Suffix List) loaded before the first real one (the reader process's start-up)."""
    parts = ResponseParts("http://a.example/", '<a href="//b.example.com/">b</a>')
    read_parts(parts, "a.example", frozenset({LINKS}), frozenset(), ())
