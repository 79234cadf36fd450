"""The link filter: URLs a page offers → hostnames worth saving. Pure.

Every source (crawler.core.sources) goes through `filter_found`: one
resolution, one normalization, one rule of names that can exist
(crawler.core.hostnames.name_refusal) and one deny rule for all of them.

What it returns, FilteredLinks, is the one form of a page's names from discovery
to the database (docs/design.md, "A page's names"): the spider puts it on its
item, the pipeline hands it to `queue.finish_many` as it is. Each name carries
its root and its source group, worked out here once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from crawler.core.addresses import Network, address_refusal
from crawler.core.budget import ExtractBudget
from crawler.core.denylist import DenyList
from crawler.core.hostnames import (
    allowed_private_networks,
    is_ip,
    local_suffixes,
    name_refusal,
    root,
)
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


@dataclass(frozen=True, slots=True)
class FoundName:
    """A hostname worth saving, its root (the registered domain every key holds) and
    where it was first seen: the place (`script src`, `certificate`...) and its source
    group. A name no page named (a seed) has no place."""

    hostname: str
    root: str
    place: str | None = None
    group: str | None = None

    @classmethod
    def of(cls, hostname: str, place: str | None = None) -> FoundName:
        """The name of a normalized `hostname`, seen in `place` (None: on no page)."""
        return cls(hostname, root(hostname), place, group_of(place) if place else None)


@dataclass(frozen=True)
class FilteredLinks:
    """Hostnames to save from one fetch, and what was dropped by which rule. A value:
    `merged` and `without` make new ones."""

    # In hostname order, each once, with the place it was first seen in.
    names: tuple[FoundName, ...] = ()
    found: int = 0  # links read, saved or not
    # Links dropped, by reason (no_hostname, single_label, ..., over_cap, no_follow, blocked).
    dropped: Mapping[str, int] = field(default_factory=dict)
    # Per source group, how many distinct saved hostnames it gave.
    by_group: Mapping[str, int] = field(default_factory=dict)
    # Per deny entry, the links it dropped (its share of dropped[no_follow or blocked]).
    by_entry: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(
        cls, via: Mapping[str, str | None] | Iterable[str], found: int | None = None, **counts
    ) -> FilteredLinks:
        """Links to normalized names given by hand (tests, benchmarks): {hostname: place}
        or hostnames, `found` (None: one link each) and the counts."""
        places = via if isinstance(via, Mapping) else dict.fromkeys(via)
        names = tuple(FoundName.of(h, places[h]) for h in sorted(places))
        return cls(names, len(names) if found is None else found, **counts)

    @property
    def filtered(self) -> int:
        """Links dropped, whatever the reason."""
        return sum(self.dropped.values())

    @property
    def hostnames(self) -> frozenset[str]:
        return frozenset(name.hostname for name in self.names)

    @property
    def via(self) -> dict[str, str | None]:
        """{hostname: the place it was first seen in}."""
        return {name.hostname: name.place for name in self.names}

    def merged(self, other: FilteredLinks) -> FilteredLinks:
        """These links and another response's of the same fetch (a redirect hop): a name
        keeps the place it was first seen in here."""
        names = {name.hostname: name for name in other.names}
        names.update((name.hostname, name) for name in self.names)
        return FilteredLinks(
            tuple(names[hostname] for hostname in sorted(names)),
            self.found + other.found,
            _added(self.dropped, other.dropped),
            _added(self.by_group, other.by_group),
            _added(self.by_entry, other.by_entry),
        )

    def without(self, hostname: str) -> FilteredLinks:
        """These links but the one to `hostname` (the fetched host's own name: no news)."""
        names = tuple(name for name in self.names if name.hostname != hostname)
        if len(names) == len(self.names):
            return self
        return FilteredLinks(names, self.found, self.dropped, self.by_group, self.by_entry)


def _added(one: Mapping[str, int], other: Mapping[str, int]) -> dict[str, int]:
    total = Counter(one)
    total.update(other)
    return dict(total)


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
    kept: dict[str, FoundName] = {}
    read = 0
    dropped: Counter[str] = Counter()
    by_group: Counter[str] = Counter()
    by_entry: Counter[str] = Counter()
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
        read += 1
        hostname = link_hostname(href, page_host, page_scheme)
        if hostname is None:
            dropped[NO_HOSTNAME] += 1
            continue
        verdict = seen.get(hostname, _UNSEEN)
        if verdict is _UNSEEN:
            verdict = _refusal(hostname, local, denylist, allowed)
            if len(seen) < REMEMBERED_NAMES:
                seen[hostname] = verdict
        rule, entry = verdict
        if rule is None and hostname not in kept:
            name_root = root(hostname)
            if caps is None or caps.admits(hostname, name_root):
                kept[hostname] = FoundName(hostname, name_root, place, group)
            else:
                rule = OVER_CAP
        if rule is not None:
            dropped[rule] += 1
            if entry is not None:
                by_entry[entry] += 1
            continue
        if (hostname, group) not in counted:
            counted.add((hostname, group))
            by_group[group] += 1
    names = tuple(kept[hostname] for hostname in sorted(kept))
    return FilteredLinks(names, read, dict(dropped), dict(by_group), dict(by_entry))


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
