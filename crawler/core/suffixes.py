"""A normalized name's public suffix, its root (registered domain) and the names above it.

Pure: no I/O. The Public Suffix List is the snapshot bundled with tldextract (no
download: suffix_list_urls is empty), with its private section, so a platform's
users (`*.github.io`) are roots of their own.
"""

from __future__ import annotations

from functools import lru_cache

import tldextract

_extract = tldextract.TLDExtract(
    suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
)


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
    """The registered domain of a normalized hostname (docs/design.md, "root"). A TLD the
    list lacks follows the PSL's default rule '*' (its last label is the suffix). An IP, a
    single label or a bare suffix is its own root."""
    if is_ip(hostname) or "." not in hostname:
        return hostname
    if suffix := public_suffix(hostname):
        domain = hostname[: -len(suffix) - 1].rpartition(".")[2]  # '' for a bare suffix
        return f"{domain}.{suffix}" if domain else hostname
    return ".".join(hostname.rsplit(".", 2)[-2:])


@lru_cache(maxsize=65536)
def public_suffix(hostname: str) -> str:
    """The public suffix of a normalized name, no IP ('' for an unknown TLD). Cached: the
    rules a seed passes (and its root) ask it about each name, and a lookup costs more
    than normalize()."""
    return _extract(hostname).suffix


def is_public_suffix(hostname: str) -> bool:
    """True when the hostname is itself a public suffix (`com`, `co.uk`, `test`)."""
    if is_ip(hostname):
        return False
    suffix = public_suffix(hostname)
    return suffix == hostname if suffix else "." not in hostname


def is_subdomain(hostname: str) -> bool:
    """True for a hostname below its root (the names that feed a trap window)."""
    return root(hostname) != hostname
