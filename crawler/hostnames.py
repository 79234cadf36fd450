"""Hostname rules: the one door every hostname goes through (DESIGN.md §1).

Pure: no I/O. The Public Suffix List is the snapshot bundled with tldextract.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import urlsplit

import idna
import tldextract

MAX_NAME = 253
MAX_LABEL = 63

# A label of letters, digits, hyphens and underscores (underscores are common in
# real DNS names, e.g. _dmarc or service names), never starting/ending with '-'.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_ASCII_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
_WEB_SCHEMES = frozenset({"http", "https"})
# Browsers drop tabs and newlines anywhere in a URL before parsing it.
_URL_NOISE = str.maketrans("", "", "\t\n\r")

_extract = tldextract.TLDExtract(
    suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
)


class HostnameError(ValueError):
    """Input that cannot be made into a hostname; names the input and the reason."""

    def __init__(self, value: object, reason: str) -> None:
        self.value = value
        self.reason = reason
        super().__init__(f"{value!r}: {reason}")


def normalize(value: str) -> str:
    """Return the normalized hostname of `value` or raise HostnameError.

    `value` may be a bare hostname or operator input carrying a scheme, userinfo,
    port, path, a `*.` prefix, upper case or a trailing dot.
    """
    if not isinstance(value, str):
        raise HostnameError(value, "not a string")
    text = _clean(value)
    if not text:
        raise HostnameError(value, "empty")
    host = _host_part(value, _authority(value, text))
    return _normalize_host(value, host)


def normalize_or_none(value: str) -> str | None:
    """normalize(), but None where the input is no hostname (for links from the web)."""
    try:
        return normalize(value)
    except HostnameError:
        return None


def link_hostname(href: str, page_host: str) -> str | None:
    """The hostname a link on a page of `page_host` points to, or None.

    Resolving a relative reference keeps the base authority, so only links with
    their own authority need parsing; mailto:, javascript:, data: and the like
    have no hostname.
    """
    href = _clean(href)
    if href.startswith("//"):
        return _authority_hostname(href[2:])
    scheme = _SCHEME.match(href)
    if scheme is None:
        return page_host
    if scheme.group()[:-1].lower() not in _WEB_SCHEMES:
        return None
    rest = href[scheme.end() :]
    if not rest.startswith("//"):
        # "http:foo" is a relative reference in a page served over http(s).
        return page_host
    return _authority_hostname(rest[2:])


def _clean(text: str) -> str:
    """Strip the ends; drop tabs and newlines inside (rare, so checked before copying)."""
    text = text.strip()
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_URL_NOISE)
    return text


def _authority_hostname(rest: str) -> str | None:
    end = len(rest)
    for stop in "/?#\\":
        i = rest.find(stop)
        if i != -1 and i < end:
            end = i
    authority = rest[:end]
    try:
        return _normalize_host(authority, _host_part(authority, authority))
    except HostnameError:
        return None


def _authority(value: str, text: str) -> str:
    """The authority (netloc) part of operator input or a URL (`text`, from `value`)."""
    if "://" in text or text.startswith("//"):
        try:
            return urlsplit(text if "://" in text else "http:" + text).netloc
        except ValueError as exc:
            raise HostnameError(value, f"bad URL ({exc})") from None
    for stop in "/?#":
        text = text.split(stop, 1)[0]
    return text


def _host_part(value: object, authority: str) -> str:
    """Strip userinfo, a `*.` prefix, port and brackets from an authority.

    Only an IPv6 literal comes back in brackets: `_normalize_host` relies on it.
    """
    host = authority.rpartition("@")[2]
    if host.startswith("*."):
        host = host[2:]
    if host.startswith("["):
        inside, bracket, after = host[1:].partition("]")
        if not bracket or (after and not _is_port(after)):
            raise HostnameError(value, "bad IPv6 literal")
        return _ipv6(value, inside)
    if host.count(":") > 1:
        return _ipv6(value, host)
    host, colon, port = host.partition(":")
    if colon and not _is_port(":" + port):
        raise HostnameError(value, f"bad port {port!r}")
    if not host:
        raise HostnameError(value, "empty hostname")
    return host


def _is_port(text: str) -> bool:
    """True for ':' followed by nothing or a port number."""
    digits = text[1:]
    return text.startswith(":") and (
        not digits or (digits.isascii() and digits.isdigit() and int(digits) < 65536)
    )


def _ipv6(value: object, text: str) -> str:
    if "%" in text:  # a zone index only means something on the sender's own machine
        raise HostnameError(value, "bad IPv6 address (zone index)")
    try:
        return "[" + ipaddress.IPv6Address(text).compressed + "]"
    except ValueError:
        raise HostnameError(value, "bad IPv6 address") from None


def _normalize_host(value: object, host: str) -> str:
    """Lower case, IDNA, no trailing dot, checked lengths; IP literals canonical."""
    if host.startswith("["):
        return host[1:-1]
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]
    host = host.lower()
    if not host.isascii():
        host = _idna(value, host)
    if _ASCII_NAME.fullmatch(host) is None:
        raise HostnameError(value, _ascii_problem(host))
    if len(host) > MAX_NAME:
        raise HostnameError(value, f"name longer than {MAX_NAME} characters")
    last = host.rpartition(".")[2]
    if last.isdigit():
        return _ipv4(value, host)
    if "xn--" in host:
        _check_punycode(value, host)
    return host


def _idna(value: object, host: str) -> str:
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise HostnameError(value, f"bad IDNA ({exc})") from None


def _check_punycode(value: object, host: str) -> None:
    for label in host.split("."):
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except (idna.IDNAError, UnicodeError) as exc:
                raise HostnameError(value, f"bad IDNA label {label!r} ({exc})") from None


def _ascii_problem(host: str) -> str:
    """Say which rule an ASCII name that failed the pattern broke."""
    for label in host.split("."):
        if not label:
            return "empty label"
        if len(label) > MAX_LABEL:
            return f"label longer than {MAX_LABEL} characters"
    return "bad label (allowed: letters, digits, '-', '_'; no '-' at either end)"


def _ipv4(value: object, host: str) -> str:
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        raise HostnameError(value, "bad IPv4 address") from None


def is_ip(hostname: str) -> bool:
    """True for a normalized IPv4 or IPv6 literal."""
    return ":" in hostname or hostname.rpartition(".")[2].isdigit()


def parents(hostname: str) -> list[str]:
    """The hostname and every name above it, nearest first (an IP has none)."""
    if is_ip(hostname):
        return [hostname]
    names = [hostname]
    dot = hostname.find(".")
    while dot != -1:
        names.append(hostname[dot + 1 :])
        dot = hostname.find(".", dot + 1)
    return names


@lru_cache(maxsize=65536)
def root(hostname: str) -> str:
    """The registered domain of a normalized hostname (DESIGN.md 'root').

    A TLD missing from the list follows the PSL's default rule '*', so its last
    label is the suffix. An IP, a single label or a bare suffix is its own root.
    """
    if is_ip(hostname) or "." not in hostname:
        return hostname
    parts = _extract(hostname)
    if parts.suffix:
        return f"{parts.domain}.{parts.suffix}" if parts.domain else hostname
    return ".".join(hostname.rsplit(".", 2)[-2:])


def is_public_suffix(hostname: str) -> bool:
    """True when the hostname is itself a public suffix (`com`, `co.uk`, `test`)."""
    if is_ip(hostname):
        return False
    parts = _extract(hostname)
    return not parts.domain if parts.suffix else "." not in hostname


def is_subdomain(hostname: str) -> bool:
    """True for a hostname below its root (the names that feed a trap window)."""
    return root(hostname) != hostname


def normalize_entry(value: str, *, force: bool = False) -> str:
    """normalize() for a deny entry: a bare public suffix only when forced.

    An entry `com` would deny every .com name, which is almost always a typo.
    """
    hostname = normalize(value)
    if not force and is_public_suffix(hostname):
        raise HostnameError(
            value, "a bare public suffix: it would deny every name under it (force to store it)"
        )
    return hostname
