"""The in-memory deny matcher (DESIGN.md §2). Pure: no I/O.

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
        self._rules: dict[str, str] = {}
        # Most look-ups miss; a set answers a miss touching one slot where a dict
        # touches two (index and entry), which matters once the table outgrows the cache.
        self._names: set[str] = set()
        for hostname, rule in entries:
            self.add(hostname, rule)

    def __len__(self) -> int:
        return len(self._rules)

    def __contains__(self, hostname: object) -> bool:
        return hostname in self._names

    def add(self, hostname: str, rule: str) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")
        self._rules[hostname] = rule
        self._names.add(hostname)

    def remove(self, hostname: str) -> None:
        self._names.discard(hostname)
        self._rules.pop(hostname, None)

    def replace(self, entries: Iterable[tuple[str, str]]) -> None:
        """Swap in a fresh set of entries at once (a reload from the database)."""
        fresh = DenyList(entries)
        self._rules, self._names = fresh._rules, fresh._names

    def entries(self) -> dict[str, str]:
        return dict(self._rules)

    def denial(self, hostname: str) -> Denial | None:
        """The nearest entry covering a normalized hostname, or None."""
        names = self._names
        if not names:
            return None
        if hostname in names:
            return Denial(hostname, self._rules[hostname])
        if ":" in hostname:  # an IPv6 literal has no parents
            return None
        dot = hostname.find(".")
        while dot != -1:
            parent = hostname[dot + 1 :]
            if parent in names:
                return Denial(parent, self._rules[parent])
            dot = hostname.find(".", dot + 1)
        return None

    def is_denied(self, hostname: str) -> bool:
        return self.denial(hostname) is not None
