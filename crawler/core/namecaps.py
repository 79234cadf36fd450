"""How many names one host's fetch may save: in all, and under any one root. Pure.

Every source of one fetch (the page, its headers, every redirect hop, the
certificate, the CNAME chain, robots.txt's sitemaps) shares one NameCaps, so one
response cannot flood the queue: a page naming 174,421 registered domains, or a
million `Link` headers, saves MAX_NAMES_PER_PAGE of them. A root's share is capped
apart (MAX_NAMES_PER_ROOT_PER_PAGE): a page of endless subdomains of one wildcard
root takes that many, and leaves room for the rest. Links to names over a cap are
counted as OVER_CAP, as every other dropped link is counted by its reason.
"""

from __future__ import annotations

from collections import Counter

OVER_CAP = "over_cap"


class NameCaps:
    """The names admitted so far for one host's fetch, in all and per root."""

    def __init__(self, per_page: int, per_root: int, own: str | None = None) -> None:
        self.per_page = per_page
        self.per_root = per_root
        self.own = own  # the fetched host itself: never a new name, never counted
        self.admitted: set[str] = set()
        self.roots: Counter[str] = Counter()

    def admits(self, hostname: str, name_root: str) -> bool:
        """True if `hostname` (under `name_root`) may be saved (admitting it if it is new
        and fits)."""
        if hostname in self.admitted or hostname == self.own:
            return True
        if len(self.admitted) >= self.per_page:
            return False
        if self.roots[name_root] >= self.per_root:
            return False
        self.roots[name_root] += 1
        self.admitted.add(hostname)
        return True

    @property
    def full(self) -> bool:
        """No new name fits any more (the page's cap is reached)."""
        return len(self.admitted) >= self.per_page
