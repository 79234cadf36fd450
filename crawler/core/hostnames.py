"""Hostname rules: the one door every hostname goes through (docs/design.md, rule 1).

Pure: no I/O. A name's root and public suffix are crawler.core.suffixes' (re-exported
here). The host a link on a page gives is read in crawler.core.urls, and normalized here.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from functools import lru_cache
from urllib.parse import urlsplit

import can_ada
import idna

from crawler.core.addresses import ALLOWED_SETTING, Network, address_refusal, parse_networks
from crawler.core.config import SettingError, from_environment

# Re-exported: most callers take a name and its root from this one door.
from crawler.core.suffixes import (  # noqa: F401
    is_ip,
    is_public_suffix,
    is_subdomain,
    parents,
    public_suffix,
    root,
)

MAX_NAME = 253
MAX_LABEL = 63

# A label of letters, digits, hyphens and underscores (underscores are common in
# real DNS names, e.g. _dmarc or service names), never starting/ending with '-'.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_ASCII_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
# Browsers drop tabs and newlines anywhere in a URL before parsing it.
_URL_NOISE = str.maketrans("", "", "\t\n\r")

SHOWN_WIDTH = 80


def shown(value: object, width: int = SHOWN_WIDTH) -> str:
    """An input as a message quotes it: its repr, cut to about `width` characters (a
    refused 10 MB line must not flood a terminal or a page)."""
    text = repr(value)
    if len(text) <= width:
        return text
    size = len(value) if isinstance(value, str | bytes) else len(text)
    return f"{text[: width - 20]}… ({size:,} characters)"


class HostnameError(ValueError):
    """Input that cannot be made into a hostname; names the input and the reason."""

    def __init__(self, value: object, reason: str) -> None:
        self.value = value
        self.reason = reason
        super().__init__(f"{shown(value)}: {reason}")


def normalize(value: str) -> str:
    """Return the normalized hostname of `value` or raise HostnameError.

    `value` may be a bare hostname or operator input carrying a scheme, userinfo,
    port, path, a `*.` prefix, upper case or a trailing dot.
    """
    if not isinstance(value, str):
        raise HostnameError(value, "not a string")
    if _ASCII_NAME.fullmatch(value):  # already lower-case ASCII labels (the common case):
        return _checked(value, value)  # every step of _parsed() but the checks is identity
    return _parsed(value)


def _parsed(value: str) -> str:
    """normalize() of any text: the authority of a URL, then its host, made normal."""
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


def normalize_parsed_host(host: str) -> str:
    """Our normalized form of a host a WHATWG URL parser gave (an IPv6 one in brackets).
    The parser did IDNA (UTS #46 non-transitional, as browsers do), IPv4 number forms
    and percent-decoding; ours is the rest: no trailing dot, brackets off, IPv6 as
    `ipaddress` writes it, normalize()'s label, length and punycode rules (HostnameError)."""
    if host.startswith("["):
        host = _ipv6(host, host[1:-1])
    return _normalize_host(host, host)


def _clean(text: str) -> str:
    """Strip the ends; drop tabs and newlines inside (rare, so checked before copying)."""
    text = text.strip()
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_URL_NOISE)
    return text


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
    """Strip userinfo, a `*.` prefix, port and brackets from an authority (only an IPv6
    literal comes back in brackets: `_normalize_host` relies on it)."""
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
    return _checked(value, host)


def _checked(value: object, host: str) -> str:
    """An ASCII name of valid labels, checked for length, IPv4 form and punycode."""
    if len(host) > MAX_NAME:
        raise HostnameError(value, f"name longer than {MAX_NAME} characters")
    if host.rpartition(".")[2].isdigit():
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
    """Refuse an `xn--` label that is no valid UTS #46 label (browsers refuse it too),
    by the parser's IDNA as browsers do, not IDNA2008: a symbol or emoji name browsers
    reach (`xn--n3h.net`, the snowman) is a hostname, so every host a link gives stays a
    fixed point of normalize()."""
    for label in host.split("."):
        if label.startswith("xn--") and not _valid_ace_label(label):
            raise HostnameError(value, f"bad IDNA label {label!r} (not valid punycode for UTS #46)")


@lru_cache(maxsize=4096)
def _valid_ace_label(label: str) -> bool:
    """True when the parser's UTS #46 ToASCII gives the `xn--` label back unchanged."""
    return can_ada.idna_encode(label) == label.encode("ascii")


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


def normalize_entry(value: str, *, force: bool = False) -> str:
    """normalize() for a deny entry: a bare public suffix only when forced (an entry `com`
    would deny every .com name, which is almost always a typo)."""
    hostname = normalize(value)
    if not force and is_public_suffix(hostname):
        raise HostnameError(
            value, "a bare public suffix: it would deny every name under it (--force to store it)"
        )
    if (words := entry_name_refusal(hostname)) is not None:
        raise HostnameError(value, f"{words}: no such name is ever saved, so it would deny nothing")
    return hostname


# How an operator seeds such a host, and crawls it: the one setting of both.
LOCALHOST_SEEDS = (
    f"to crawl this machine, seed its address, 127.0.0.1, with {ALLOWED_SETTING}=127.0.0.1/32"
)


# The same words for every address of a kind: a seed file's summary groups refusals by them.
PRIVATE_SEEDS = "list its network there, a CIDR such as 10.20.0.0/16, to seed and crawl it"


def seed_refusal(
    hostname: str,
    *,
    allow_private: bool = False,
    force: bool = False,
    local: frozenset[str] | None = None,
) -> str | None:
    """Why a normalized hostname is no crawlable seed, in words for an operator; or None.

    A bare public suffix has no site of its own (seeded only when forced, as a deny
    entry is). localhost, names under .localhost and IP literals that are not on the
    public web (loopback, private, link-local...) are refused unless ALLOWED_PRIVATE_NETWORKS
    holds the address (the crawl would refuse it too), or `allow_private` (the deprecated
    --allow-private). `local`: as for name_refusal().
    """
    if hostname == "localhost" or hostname.endswith(".localhost"):
        if allow_private:
            return None
        return f"localhost: this machine, not a host on the web ({LOCALHOST_SEEDS})"
    if is_ip(hostname):
        kind = None if allow_private else address_refusal(hostname, allowed_private_networks())
        return f"{kind}, not in {ALLOWED_SETTING} ({PRIVATE_SEEDS})" if kind else None
    if not force and is_public_suffix(hostname):
        if "." not in hostname and not public_suffix(hostname):
            # `intranet`, `corp`: a suffix only by the list's default rule (an unknown last
            # label is one); to an operator it is a local name, not a public suffix.
            return "a single label: not a name on the public internet (--force to seed it)"
        return "a bare public suffix: no site of its own to crawl (--force to seed it)"
    if (words := entry_name_refusal(hostname, local)) is not None:
        return f"{words}: no host on the web has such a name"
    return None


# --- names that can exist ------------------------------------------------------------

SINGLE_LABEL = "single_label"
UNKNOWN_TLD = "unknown_tld"
SPECIAL_USE = "special_use"
# Special-use names (RFC 6761, 6762, 7686, 8375, 9476 and ICANN's .internal): no name
# under them is a host on the public web, whatever the Public Suffix List says.
SPECIAL_USE_NAMES = frozenset(
    {"localhost", "invalid", "example", "test", "local", "onion", "alt", "internal", "home.arpa"}
)
_environ: Mapping[str, str] = {}


def read_environment(environ: Mapping[str, str]) -> None:
    """Where this process's LOCAL_SUFFIXES is read (crawler/__init__.py: os.environ)."""
    global _environ
    _environ = environ


def local_suffixes(value: str | None = None) -> frozenset[str]:
    """LOCAL_SUFFIXES (`test, .Corp.Example`) as normalized names; None: this process's."""
    return _local_suffixes(from_environment("LOCAL_SUFFIXES", _environ) if value is None else value)


@lru_cache(maxsize=16)
def _local_suffixes(value: str) -> frozenset[str]:
    names = set()
    for part in value.split(","):
        part = part.strip().removeprefix("*").strip(".")
        if part:
            try:
                names.add(normalize(part))
            except HostnameError as exc:
                raise SettingError(f"LOCAL_SUFFIXES={value!r}: {exc}") from None
    return frozenset(names)


def allowed_private_networks(value: str | None = None) -> tuple[Network, ...]:
    """ALLOWED_PRIVATE_NETWORKS as networks; None: this process's."""
    if value is None:
        value = from_environment("ALLOWED_PRIVATE_NETWORKS", _environ)
    return parse_networks(value)


def name_refusal(hostname: str, local: frozenset[str] | None = None) -> str | None:
    """Why a normalized hostname names nothing that can exist on the web, or None.

    SPECIAL_USE (at or under a special-use name), SINGLE_LABEL, UNKNOWN_TLD (a top-level
    domain the ICANN and private sections of the bundled Public Suffix List do not know).
    An IP literal, and a name at or under one of `local` (None: this process's
    LOCAL_SUFFIXES), are never refused.
    """
    return _name_refusal(hostname, local_suffixes() if local is None else local)


@lru_cache(maxsize=65536)
def _name_refusal(hostname: str, local: frozenset[str]) -> str | None:
    if is_ip(hostname) or (local and not local.isdisjoint(parents(hostname))):
        return None
    labels = hostname.rsplit(".", 2)
    if labels[-1] in SPECIAL_USE_NAMES or ".".join(labels[-2:]) in SPECIAL_USE_NAMES:
        return SPECIAL_USE
    if len(labels) == 1:
        return SINGLE_LABEL
    return None if public_suffix(hostname) else UNKNOWN_TLD


def entry_name_refusal(hostname: str, local: frozenset[str] | None = None) -> str | None:
    """name_refusal() in words for an operator's seed or deny entry; None when it can exist.
    A bare suffix of the list (`com`, `co.uk`) is left to the bare-public-suffix rule."""
    if not is_ip(hostname) and public_suffix(hostname) == hostname:
        return None
    reason = name_refusal(hostname, local)
    if reason == SPECIAL_USE:
        special = next(n for n in parents(hostname) if n in SPECIAL_USE_NAMES)
        words = f"{special!r} is a special-use name"
    elif reason == UNKNOWN_TLD:
        words = f"{hostname.rpartition('.')[2]!r} is no top-level domain of the Public Suffix List"
    else:
        words = "a single label" if reason == SINGLE_LABEL else None
    return words and f"{words} (LOCAL_SUFFIXES lets a private or test network's names in)"
