"""The web's answers that are failures, told as a count, not a line each. Pure.

A refused connection, a reset, an NXDOMAIN or a timeout is the web answering: for a
crawler of the open web the common case, and no fault of ours. Each is counted here by
outcome, and the counts are told at INFO at most once an interval ("the web's answers
in the last 60 s: 12 TCP_REFUSED, 3 DNS_NXDOMAIN"), and once more as the crawl closes.
ERROR is left for faults of ours. Our own refusals (ADDRESS_REFUSED) are no answer of
the web: they are told apart, once per address (`FirstTimes`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

from crawler.core.outcomes import (
    HTTP_ERROR,
    HTTP_TIMEOUT,
    HTTP_TOO_LARGE,
    NETWORK_FAILURES,
    REFUSED_BY_US,
)

# The failures that are an answer of the web: below HTTP, or an HTTP answer we do not read.
WEB_ANSWERS = (NETWORK_FAILURES - REFUSED_BY_US) | {HTTP_TIMEOUT, HTTP_TOO_LARGE, HTTP_ERROR}


class AnswerTally:
    """Failures by outcome since they were last told; `now` is the caller's (monotonic s)."""

    def __init__(self, every: float, now: float) -> None:
        self.every = every
        self.counts: Counter[str] = Counter()
        self.since = now

    def add(self, outcome: str) -> None:
        self.counts[outcome] += 1

    def due(self, now: float) -> bool:
        """Something to tell, and an interval gone since the last telling."""
        return bool(self.counts) and now - self.since >= self.every

    def tell(self, now: float) -> str:
        """The line for the counts so far ('' when there are none); they start again."""
        line = ""
        if self.counts:
            counts = ", ".join(f"{n} {outcome}" for outcome, n in self.counts.most_common())
            line = f"the web's answers in the last {now - self.since:.0f} s: {counts}"
        self.counts = Counter()
        self.since = now
        return line


class FirstTimes:
    """Whether a key is seen for the first time, among at most `size` remembered."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._seen: set[Hashable] = set()

    def first(self, key: Hashable) -> bool:
        if key in self._seen or len(self._seen) >= self.size:
            return False
        self._seen.add(key)
        return True
