"""The browser's truth for bench/yield.py: bench/corpus/browser-truth.json, read and spelled
in bench's own way. Nothing here comes from crawler/ (its code or its tables).

The file is made by bench/_record_browser_truth.py (Chromium, JavaScript off then on): per page
URL, the hosts in the DOM's links (`links`), the hosts the browser tried with and
without JavaScript (`resources`), only with it (`scripts`), only without (`noscript`,
not scored).

Names are spelled alike on both sides by `spelled`: lower case, no trailing dot, IDNA
A-labels (the `idna` package, UTS #46). `cannot_exist` says why a name is no host on
the public web: a single label, a top-level domain that tldextract's bundled Public
Suffix List snapshot does not know (never fetched: suffix_list_urls is empty), or a
special-use name (IANA's Special-Use Domain Names registry, plus ICANN's .internal).
"""

from __future__ import annotations

import ipaddress
import json
from functools import lru_cache
from pathlib import Path

import idna
import tldextract

TRUTH = Path(__file__).parent / "corpus" / "browser-truth.json"
SCORED = ("links", "resources", "scripts")

# Top-level special-use names: RFC 2606/6761 (test, example, invalid, localhost),
# RFC 6762 (local), RFC 7686 (onion), RFC 9476 (alt), RFC 8375 (home.arpa); ICANN
# reserved internal (2024). example.com/.net/.org exist (IANA serves them): not here.
SPECIAL_USE = ("test", "example", "invalid", "localhost", "local", "onion", "alt", "internal")
SPECIAL_USE_TWO = ("home.arpa",)

_EXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def load_truth(path: Path = TRUTH) -> tuple[str, dict[str, dict[str, set[str]]]]:
    """(Chromium's version, {page url: {group: hostnames, spelled}})."""
    data = json.loads(path.read_text())
    pages = {
        url: {group: {n for n in map(spelled, names) if n} for group, names in groups.items()}
        for url, groups in data["pages"].items()
    }
    return data["chromium"], pages


def is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


@lru_cache(maxsize=65536)
def spelled(name: str) -> str | None:
    """A hostname as bench compares it, or None when no host can be spelled so."""
    name = name.strip().rstrip(".").lower()
    if not name or is_ip(name):
        return name or None
    try:
        return idna.encode(name, uts46=True).decode("ascii")
    except idna.IDNAError:
        return name if name.isascii() else None


@lru_cache(maxsize=65536)
def cannot_exist(name: str) -> str | None:
    """Why `name` (spelled) names no host on the public web, or None."""
    if is_ip(name):
        return None
    labels = name.split(".")
    if labels[-1] in SPECIAL_USE or ".".join(labels[-2:]) in SPECIAL_USE_TWO:
        return "special-use"
    if len(labels) == 1:
        return "single label"
    if not _EXTRACT(name, include_psl_private_domains=True).suffix:
        return "unknown TLD"
    return None


@lru_cache(maxsize=65536)
def site_of(name: str) -> str:
    """The registrable domain (ICANN section), or the name itself (an IP, a bare suffix)."""
    return _EXTRACT(name).top_domain_under_public_suffix or name
