"""A CPU budget for what one host's fetch reveals. Pure: the clock is given.

The extractors are linear (bench/hostile.py), yet a big enough page still costs:
a worker is one thread, and every other host in it waits while one response is
read. Extraction (the document's walk, the link filter) asks `spent()` as it goes
and stops once MAX_EXTRACT_SECONDS of reading are spent on one fetch, redirect
hops included; what it stopped on is kept in `stopped`, for the stats and the host.
"""

from __future__ import annotations

from collections.abc import Callable

# Why extraction stopped, as the stats, the item and the host's page say it.
BUDGET_SPENT = "budget_spent"

_CHECK_EVERY = 256  # units of work between two looks at the clock: a look costs a call


class ExtractBudget:
    """Seconds of extraction one fetch may spend, counted over its reading spells."""

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self.clock = clock
        self.used = 0.0  # seconds of the spells that ended
        self.began: float | None = None  # the clock at the start of the current spell
        self.stopped: str | None = None
        self._ticks = 0

    def begin(self) -> None:
        """A reading spell starts (the page, or a redirect hop)."""
        self.began = self.clock()

    def end(self) -> None:
        if self.began is not None:
            self.used += self.clock() - self.began
            self.began = None

    def spent(self) -> bool:
        """True once the budget is spent; looks at the clock every _CHECK_EVERY calls."""
        if self.stopped is not None:
            return True
        self._ticks += 1
        if self._ticks % _CHECK_EVERY:
            return False
        return self.exhausted()

    def exhausted(self) -> bool:
        """Looks at the clock now; True (and `stopped` set) once the budget is spent."""
        running = self.stopped is None and self.began is not None
        if running and self.used + self.clock() - self.began > self.seconds:
            self.stopped = BUDGET_SPENT
        return self.stopped is not None
