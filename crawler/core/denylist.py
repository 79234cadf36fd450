"""The in-memory deny matcher (docs/design.md, rule 2). Pure: no I/O.

An entry covers itself and every name below it. Matching walks the name's
parents (at most ~127) with one dict lookup each, so its cost does not grow
with the number of entries.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

BLOCKED = "blocked"
NO_FOLLOW = "no_follow"
RULES = (BLOCKED, NO_FOLLOW)


class Denial(NamedTuple):
    """Why a hostname is denied: the entry that covers it and that entry's rule."""

    entry: str
    rule: str


class DenyList:
    """Normalized deny entries, each with its rule ('blocked' or 'no_follow')."""

    def __init__(self, entries: Iterable[tuple[str, str]] = ()) -> None:
        # Sets, not a dict: most look-ups miss, and a set answers a miss touching one
        # slot where a dict touches two (index and entry) -- that is what a lookup
        # costs once the table outgrows the CPU caches. The rule of a hit comes from
        # the no_follow set: operators keep it small (giant platforms), so it stays
        # cached while blocked entries grow into the millions.
        self._names: set[str] = set()
        self._no_follow: set[str] = set()
        for hostname, rule in entries:
            self.add(hostname, rule)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, hostname: object) -> bool:
        return hostname in self._names

    def add(self, hostname: str, rule: str) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")
        self._names.add(hostname)
        if rule == NO_FOLLOW:
            self._no_follow.add(hostname)
        else:
            self._no_follow.discard(hostname)

    def remove(self, hostname: str) -> None:
        self._names.discard(hostname)
        self._no_follow.discard(hostname)

    def replace(self, entries: Iterable[tuple[str, str]]) -> None:
        """Swap in a fresh set of entries at once (a reload from the database)."""
        fresh = DenyList(entries)
        self._names, self._no_follow = fresh._names, fresh._no_follow

    def entries(self) -> dict[str, str]:
        no_follow = self._no_follow
        return {name: NO_FOLLOW if name in no_follow else BLOCKED for name in self._names}

    def denial(self, hostname: str) -> Denial | None:
        """The nearest entry covering a normalized hostname, or None."""
        names, no_follow = self._names, self._no_follow
        if not names:
            return None
        if hostname in names:
            return Denial(hostname, NO_FOLLOW if hostname in no_follow else BLOCKED)
        if ":" in hostname:  # an IPv6 literal has no parents
            return None
        dot = hostname.find(".")
        while dot != -1:
            parent = hostname[dot + 1 :]
            if parent in names:
                return Denial(parent, NO_FOLLOW if parent in no_follow else BLOCKED)
            dot = hostname.find(".", dot + 1)
        return None

    def is_denied(self, hostname: str) -> bool:
        return self.denial(hostname) is not None
