"""Name floods: one page that names many new registered domains which then fail at DNS.
Pure.

The trap rule (crawler.core.traps) watches the subdomains of one root; a page that
names thousands of registered domains makes each its own root, so no root's window
ever fills. The same idea per referring page: each new registered domain a page
added remembers that page; as each settles, its outcome goes into the page's window;
once the last `size` of them all failed at DNS, the page is a name flood. One that
answers, or fails otherwise, clears the window, as a live subdomain clears a root's.
Memory is bounded: at most `names` names remembered (the oldest forgotten first) and
`pages` windows.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from crawler.core.links import FoundName
from crawler.core.outcomes import (
    DNS_ERROR,
    DNS_NOANSWER,
    DNS_NXDOMAIN,
    DNS_REFUSED,
    DNS_SERVFAIL,
    DNS_TIMEOUT,
)
from crawler.core.traps import SAMPLE_NAMES

DNS_FAILURES = frozenset(
    {DNS_NXDOMAIN, DNS_SERVFAIL, DNS_NOANSWER, DNS_REFUSED, DNS_TIMEOUT, DNS_ERROR}
)


@dataclass(frozen=True)
class Flood:
    """A page whose last new registered domains all failed at DNS."""

    page: str
    names: tuple[str, ...]

    def describe(self) -> str:
        samples = ", ".join(self.names[:SAMPLE_NAMES])
        return (
            f"name flood: the last {len(self.names)} new registered domains that {self.page}"
            f" named all failed at DNS; e.g. {samples}"
        )


class FloodWatch:
    """The new registered domains each page added, and each page's failures in a row."""

    def __init__(self, size: int, names: int = 100_000, pages: int = 10_000) -> None:
        self.size = size
        self.max_names = names
        self.max_pages = pages
        self._page_of: OrderedDict[str, str] = OrderedDict()
        self._failed: OrderedDict[str, list[str]] = OrderedDict()
        self._flooded: OrderedDict[str, None] = OrderedDict()  # told once each

    def added(self, page: str, new: Iterable[FoundName]) -> None:
        """`page`'s fetch added the names `new` to the queue."""
        for name in new:
            if name.root == name.hostname:  # a registered domain: a root of its own
                self._page_of[name.hostname] = page
                _bound(self._page_of, self.max_names)

    def settled(self, hostname: str, outcome: str) -> Flood | None:
        """`hostname` settled with `outcome`: the Flood its page just proved, if any."""
        page = self._page_of.pop(hostname, None)
        if page is None or page in self._flooded:
            return None
        if outcome not in DNS_FAILURES:
            self._failed.pop(page, None)
            return None
        failed = self._failed.setdefault(page, [])
        self._failed.move_to_end(page)
        _bound(self._failed, self.max_pages)
        failed.append(hostname)
        if len(failed) < self.size:
            return None
        del self._failed[page]
        self._flooded[page] = None
        _bound(self._flooded, self.max_pages)
        return Flood(page, tuple(reversed(failed)))


def _bound(entries: OrderedDict, most: int) -> None:
    while len(entries) > most:
        entries.popitem(last=False)
