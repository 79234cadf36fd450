"""The link filter: URLs a page offers → hostnames worth saving. Pure.

Every source (crawler.core.sources) goes through `filter_found`: one
resolution, one normalization, one rule of names that can exist
(crawler.core.hostnames.name_refusal) and one deny rule for all of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from crawler.core.addresses import Network, address_refusal
from crawler.core.budget import ExtractBudget
from crawler.core.denylist import DenyList
from crawler.core.hostnames import allowed_private_networks, is_ip, local_suffixes, name_refusal
from crawler.core.namecaps import OVER_CAP, NameCaps
from crawler.core.sources import group_of
from crawler.core.urls import link_hostname, link_origin

NO_HOSTNAME = "no_hostname"
# Names whose verdict one filter_found call remembers: past it a name is judged each time
# it comes, so a page of a million distinct names holds no million-entry cache.
REMEMBERED_NAMES = 20_000
_UNSEEN = object()
# An IP literal the crawl would refuse to connect to (crawler.core.addresses).
PRIVATE_ADDRESS = "private_address"


@dataclass
class FilteredLinks:
    """Hostnames to save from one page, and what was dropped by which rule."""

    hostnames: set[str] = field(default_factory=set)
    found: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    # The place each saved hostname was first seen in (`script src`, `certificate`...).
    via: dict[str, str] = field(default_factory=dict)
    # Per source group, how many distinct saved hostnames it gave.
    by_group: Counter[str] = field(default_factory=Counter)
    # Per deny entry, the links it dropped (its share of dropped[no_follow or blocked]).
    by_entry: Counter[str] = field(default_factory=Counter)

    @property
    def filtered(self) -> int:
        return sum(self.dropped.values())

    def merge(self, other: FilteredLinks) -> None:
        """Add what another response of the same fetch (a redirect hop) revealed."""
        self.hostnames |= other.hostnames
        self.found += other.found
        self.dropped.update(other.dropped)
        for hostname, place in other.via.items():
            self.via.setdefault(hostname, place)
        self.by_group.update(other.by_group)
        self.by_entry.update(other.by_entry)


def filter_links(
    hrefs: Iterable[str], page_host: str, denylist: DenyList, page_scheme: str = "http"
) -> FilteredLinks:
    """Resolve each href against the page, normalize its hostname, drop denied ones.

    Links resolve as browsers resolve them (WHATWG) against `{page_scheme}://{page_host}/`;
    the scheme matters only for a link like `https:example.com` (a host on an http page,
    a path on an https one).
    """
    return filter_found(((href, "a href") for href in hrefs), page_host, denylist, page_scheme)


def filter_found(
    found: Iterable[tuple[str, str]],
    page_host: str,
    denylist: DenyList,
    page_scheme: str = "http",
    base: str | None = None,
    groups: frozenset[str] | None = None,
    local: frozenset[str] | None = None,
    caps: NameCaps | None = None,
    budget: ExtractBudget | None = None,
    allowed: tuple[Network, ...] | None = None,
) -> FilteredLinks:
    """filter_links for (url, place) pairs from any source, with the page's `<base href>`.

    Relative URLs resolve against `base` when it is an http(s) URL (resolved itself
    against the page), else against the page. Places whose group is not in `groups`
    (None: every group) are skipped unread. A name that cannot exist (a single label,
    an unknown TLD, a special-use name; not under `local`, None: LOCAL_SUFFIXES) is
    dropped by its reason before the deny list is asked, and so is an IP literal outside
    the public web and the `allowed` networks (None: ALLOWED_PRIVATE_NETWORKS). A name
    over `caps` is dropped as OVER_CAP; reading stops once `budget` is spent (it says so
    in `budget.stopped`).
    """
    if local is None:
        local = local_suffixes()
    if allowed is None:
        allowed = allowed_private_networks()
    if base is not None:
        page_scheme, page_host = link_origin(base, page_host, page_scheme) or (
            page_scheme,
            page_host,
        )
    result = FilteredLinks()
    seen: dict[str, object] = {}
    place_groups: dict[str, str] = {}
    counted: set[tuple[str, str]] = set()
    for href, place in found:
        if budget is not None and budget.spent():
            break
        group = place_groups.get(place)
        if group is None:
            group = place_groups[place] = group_of(place)
        if groups is not None and group not in groups:
            continue
        result.found += 1
        hostname = link_hostname(href, page_host, page_scheme)
        if hostname is None:
            result.dropped[NO_HOSTNAME] += 1
            continue
        verdict = seen.get(hostname, _UNSEEN)
        if verdict is _UNSEEN:
            verdict = _refusal(hostname, local, denylist, allowed)
            if len(seen) < REMEMBERED_NAMES:
                seen[hostname] = verdict
        rule, entry = verdict
        if rule is None and caps is not None and not caps.admits(hostname):
            rule = OVER_CAP
        if rule is not None:
            result.dropped[rule] += 1
            if entry is not None:
                result.by_entry[entry] += 1
            continue
        result.hostnames.add(hostname)
        result.via.setdefault(hostname, place)
        if (hostname, group) not in counted:
            counted.add((hostname, group))
            result.by_group[group] += 1
    return result


def _refusal(
    hostname: str, local: frozenset[str], denylist: DenyList, allowed: tuple[Network, ...]
) -> tuple[str | None, str | None]:
    """(the rule that drops a name, the deny entry if it is the deny list's): a name that
    cannot exist, an address off the public web, then the deny list; or (None, None)."""
    refusal = name_refusal(hostname, local) or _address_rule(hostname, allowed)
    if refusal is not None:
        return refusal, None
    denial = denylist.denial(hostname)
    return (denial.rule, denial.entry) if denial else (None, None)


def _address_rule(hostname: str, allowed: tuple[Network, ...]) -> str | None:
    if is_ip(hostname) and address_refusal(hostname, allowed) is not None:
        return PRIVATE_ADDRESS
    return None
