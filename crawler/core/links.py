"""The link filter (docs/design.md, rule 3): links on a page → hostnames worth saving. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from crawler.core.denylist import DenyList
from crawler.core.hostnames import link_hostname

NO_HOSTNAME = "no_hostname"


@dataclass
class FilteredLinks:
    """Hostnames to save from one page, and what was dropped by which rule."""

    hostnames: set[str] = field(default_factory=set)
    found: int = 0
    dropped: Counter[str] = field(default_factory=Counter)

    @property
    def filtered(self) -> int:
        return sum(self.dropped.values())


def filter_links(
    hrefs: Iterable[str], page_host: str, denylist: DenyList, page_scheme: str = "http"
) -> FilteredLinks:
    """Resolve each href against the page, normalize its hostname, drop denied ones.

    Links resolve as browsers resolve them (WHATWG) against `{page_scheme}://{page_host}/`;
    the scheme matters only for a link like `https:example.com` (a host on an http page,
    a path on an https one).
    """
    result = FilteredLinks()
    seen: dict[str, str | None] = {}
    for href in hrefs:
        result.found += 1
        hostname = link_hostname(href, page_host, page_scheme)
        if hostname is None:
            result.dropped[NO_HOSTNAME] += 1
            continue
        if hostname not in seen:
            denial = denylist.denial(hostname)
            seen[hostname] = denial.rule if denial else None
        rule = seen[hostname]
        if rule is None:
            result.hostnames.add(hostname)
        else:
            result.dropped[rule] += 1
    return result
