"""What the crawl itself already says about the world: who answered us, and when.

Every page that answers and every name our resolver resolves shows that the world
answers us at that layer, at that moment. The world check (crawler.rules.world_check) reads
that first, and asks a canary only when the crawl has said nothing since a failure
began: a busy crawl proves itself, and the canaries are left alone. The same record
keeps the canaries' politeness: when each host was last contacted, by the crawl or
by a check, so that no host is asked twice within the check interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict

from crawler.core.hostnames import root

# The layers a failure is judged at: a DNS failure needs a resolver that answers, one
# of TCP or TLS a host that answers over the network (defined with the outages' words).
from crawler.core.outages import DNS, NETWORK, NEVER, Heard

# Roots remembered per layer for "another root answered since": the newest few suffice.
ROOTS_KEPT = 16
# Hosts whose last failure in silence is remembered per layer, for "several roots".
SILENCES_KEPT = 64
# Hosts whose last contact is remembered, for the canaries' interval.
CONTACTS_KEPT = 4096


def failure_layer(outcome: str) -> str:
    """The layer whose health a failure with this outcome depends on."""
    return DNS if outcome.startswith("DNS_") else NETWORK


class _Newest(OrderedDict):
    """name -> monotonic time, the newest last, at most `size` names."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def note(self, name: str, at: float) -> None:
        self.pop(name, None)
        self[name] = at
        while len(self) > self.size:
            self.popitem(last=False)


class Evidence:
    """Answers heard from the world, by layer and root, and each host's last contact."""

    def __init__(self) -> None:
        self._answered = {DNS: _Newest(ROOTS_KEPT), NETWORK: _Newest(ROOTS_KEPT)}
        self._contacted = {DNS: _Newest(CONTACTS_KEPT), NETWORK: _Newest(CONTACTS_KEPT)}
        self._silent = {DNS: _Newest(SILENCES_KEPT), NETWORK: _Newest(SILENCES_KEPT)}
        self._news: asyncio.Event | None = None

    def heard(self, hostname: str, layer: str, began: float | None = None) -> None:
        """`hostname` answered us now at `layer` (a page answered: both layers). A page
        proves the world answered as of `began`, when its fetch began: its connection,
        made then, may have outlived the world's answers (a page over it is no news)."""
        now = time.monotonic()
        at = now if began is None else min(began, now)
        for each in (DNS, NETWORK) if layer == NETWORK else (DNS,):
            answered = self._answered[each]
            answered.note(root(hostname), max(at, answered.get(root(hostname), NEVER)))
        self.contacted(hostname, layer, now)
        self._tell()

    def silent(self, hostname: str, layer: str) -> None:
        """`hostname` failed at `layer` now in a way our own outage would (is_silence)."""
        self._silent[layer].note(hostname, time.monotonic())
        self._tell()

    def _tell(self) -> None:
        """Wake whoever waits for news."""
        if self._news is not None:
            self._news.set()
            self._news = None

    def heard_at(self, layer: str, other_than: str, since: float = NEVER) -> Heard:
        """What was heard at `layer` apart from `other_than`'s own failure: the newest
        answer of another root, the newest silence of another host, and the roots silent
        (`other_than`'s included) since that answer and `since`."""
        skip = root(other_than) if other_than else ""
        answers = [at for r, at in self._answered[layer].items() if r != skip]
        last_answer = max(answers, default=NEVER)
        silences = self._silent[layer]
        last_silence = max((at for h, at in silences.items() if h != other_than), default=NEVER)
        floor = max(last_answer, since)
        roots = {root(h) for h, at in silences.items() if at > floor}
        return Heard(last_answer, last_silence, len(roots))

    def contacted(self, hostname: str, layer: str, at: float | None = None) -> None:
        """We asked `hostname` at `layer` now (or `at`), whatever it answered."""
        self._contacted[layer].note(hostname, time.monotonic() if at is None else at)

    def last_contact(self, hostname: str, layer: str) -> float:
        """When `hostname` was last asked at `layer` (monotonic; -inf if not lately)."""
        return self._contacted[layer].get(hostname, float("-inf"))

    async def news(self, timeout: float) -> None:
        """Return when anything is heard, or after `timeout` seconds."""
        if self._news is None:
            self._news = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._news.wait(), max(timeout, 0.0))
