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
from collections.abc import Iterable, Iterator, Mapping
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
# Names refused that one gather_found call remembers: past it a refused name is judged each
# time it comes, so a page of a million junk names holds no million-entry cache (the names
# kept are bounded by what one response may hold: DOWNLOAD_MAXSIZE, MAX_HEADER_BYTES).
REMEMBERED_NAMES = 20_000
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
    """filter_links for (url, place) pairs from any source, with the page's `<base href>`:
    the names gathered (`gather_found`), then judged by the deny list and the caps (`Judge`).

    Relative URLs resolve against `base` when it is an http(s) URL (resolved itself
    against the page), else against the page. Places whose group is not in `groups`
    (None: every group) are skipped unread. A name that cannot exist (a single label,
    an unknown TLD, a special-use name; not under `local`, None: LOCAL_SUFFIXES) is
    dropped by its reason before the deny list is asked, and so is an IP literal outside
    the public web and the `allowed` networks (None: ALLOWED_PRIVATE_NETWORKS). A name
    over `caps` is dropped as OVER_CAP; reading stops once `budget` is spent (it says so
    in `budget.stopped`).
    """
    gathered = gather_found(found, page_host, page_scheme, base, groups, local, budget, allowed)
    judge = Judge(gathered, denylist, caps)
    judge.add(gathered.names.items())
    return judge.links()


@dataclass
class Gathered:
    """What a response's links name before the deny list and the caps are asked: the
    part of the link filter that needs neither, so that a heavy response's can be worked
    out away from the worker's loop (crawler/network/reader.py). Plain values only."""

    read: int = 0  # links read
    refused: dict[str, int] = field(default_factory=dict)  # links dropped, by reason
    # hostname -> [root, the place first seen in, links to it, the groups of those links],
    # in the order first seen (the caps admit names in that order).
    names: dict[str, list] = field(default_factory=dict)


def gather_found(
    found: Iterable[tuple[str, str]],
    page_host: str,
    page_scheme: str = "http",
    base: str | None = None,
    groups: frozenset[str] | None = None,
    local: frozenset[str] | None = None,
    budget: ExtractBudget | None = None,
    allowed: tuple[Network, ...] | None = None,
) -> Gathered:
    """The names `found` gives (filter_found's arguments), each with its root, without
    the names that cannot exist; reading stops once `budget` is spent."""
    if local is None:
        local = local_suffixes()
    if allowed is None:
        allowed = allowed_private_networks()
    if base is not None:
        page_scheme, page_host = link_origin(base, page_host, page_scheme) or (
            page_scheme,
            page_host,
        )
    read = 0
    refused: Counter[str] = Counter()
    names: dict[str, list] = {}
    refusals: dict[str, str] = {}  # names refused, up to REMEMBERED_NAMES of them
    place_groups: dict[str, str] = {}
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
            refused[NO_HOSTNAME] += 1
            continue
        name = names.get(hostname)
        if name is not None:
            name[2] += 1
            if group not in name[3]:
                name[3] += (group,)
            continue
        refusal = refusals.get(hostname) or _refusal(hostname, local, allowed)
        if refusal is not None:
            refused[refusal] += 1
            if len(refusals) < REMEMBERED_NAMES:
                refusals[hostname] = refusal
            continue
        names[hostname] = [root(hostname), place, 1, (group,)]
    return Gathered(read, dict(refused), names)


def packed(names: dict[str, list]) -> str:
    """A Gathered's names as one string, a line each (hostname, root, place, links, groups,
    tab-separated; no name, place or group holds a tab or a comma): sent from the reader
    process, one string unpickles at once where a list a name would hold the worker's
    interpreter for as long as the reading took to make them."""
    return "\n".join(
        f"{hostname}\t{name_root}\t{place}\t{links}\t{','.join(groups)}"
        for hostname, (name_root, place, links, groups) in names.items()
    )


def unpacked(text: str) -> Iterator[tuple[str, list]]:
    """The names `packed` made, one at a time, in their order."""
    start, end = 0, len(text)
    while start < end:
        stop = text.find("\n", start)
        if stop == -1:
            stop = end
        hostname, name_root, place, links, groups = text[start:stop].split("\t")
        yield hostname, [name_root, place, int(links), tuple(groups.split(","))]
        start = stop + 1


class Judge:
    """The deny list and the caps over a Gathered's names, a slice at a time (a heavy
    response's names are judged in steps, the loop running between them)."""

    def __init__(self, gathered: Gathered, denylist: DenyList, caps: NameCaps | None) -> None:
        self.read = gathered.read
        self.denylist = denylist
        self.caps = caps
        self.kept: list[FoundName] = []
        self.dropped: Counter[str] = Counter(gathered.refused)
        self.by_group: Counter[str] = Counter()
        self.by_entry: Counter[str] = Counter()

    def add(self, names: Iterable[tuple[str, list]]) -> int:
        """Judge these names (hostname, Gathered entry), in the order they were found; how
        many there were."""
        denial_of, caps = self.denylist.denial, self.caps
        dropped, by_group = self.dropped, self.by_group
        count = 0
        for hostname, (name_root, place, links, groups) in names:
            count += 1
            denial = denial_of(hostname)
            if denial is not None:
                dropped[denial.rule] += links
                self.by_entry[denial.entry] += links
            elif caps is None or caps.admits(hostname, name_root):
                self.kept.append(FoundName(hostname, name_root, place, groups[0]))
                by_group.update(groups)
            else:
                dropped[OVER_CAP] += links
        return count

    def links(self) -> FilteredLinks:
        names = tuple(sorted(self.kept, key=_hostname_of))
        by = (dict(self.dropped), dict(self.by_group), dict(self.by_entry))
        return FilteredLinks(names, self.read, *by)


def _hostname_of(name: FoundName) -> str:
    return name.hostname


def _refusal(hostname: str, local: frozenset[str], allowed: tuple[Network, ...]) -> str | None:
    """The rule that drops a name that cannot exist, or an address off the public web."""
    return name_refusal(hostname, local) or _address_rule(hostname, allowed)


def _address_rule(hostname: str, allowed: tuple[Network, ...]) -> str | None:
    if is_ip(hostname) and address_refusal(hostname, allowed) is not None:
        return PRIVATE_ADDRESS
    return None
