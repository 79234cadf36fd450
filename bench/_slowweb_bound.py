"""A slow world's politeness bound: how soon `share` of its answering hosts could have
answered if claims, the worker, the database and the CPU took no time at all.

The reference for bench/slowweb.py. It shares no code with what it measures: it imports
nothing of the crawler (not its root rule, not its settings table); the bench hands it
each host's root as the world was built, the world's own delays and the crawl's rules as
plain numbers.

The best possible order under the rules: each root serves at most `root_concurrency` of
its hosts at once, in the order they were seeded, the next taking the first slot to free
up; no other limit (as many hosts in flight as there are free slots). A host costs:

- answering: its DNS reply, then `requests` answers (robots.txt and its page when
  robots.txt is obeyed, else the page), each after the host's delay;
- NXDOMAIN or refused: its DNS reply (a refused connect, https then plain http, is
  counted free);
- hanging (accepts TCP and TLS, never answers): its DNS reply and the download timeout;
- no DNS reply: two DNS timeouts (one retry).

The bound is the moment the `share`-th of the answering hosts has its page.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass


@dataclass(frozen=True)
class Rules:
    """The crawl's politeness rules and timeouts, as numbers."""

    root_concurrency: int
    robots_obeyed: bool
    download_timeout: float
    dns_timeout: float
    dns_seconds: float  # the fastest DNS reply the world gives

    @property
    def requests(self) -> int:
        return 2 if self.robots_obeyed else 1


def host_seconds(kind: str, delay: float, rules: Rules) -> float:
    """How long one host holds its root's slot."""
    if kind == "answering":
        return rules.dns_seconds + rules.requests * delay
    if kind in ("nxdomain", "refused"):
        return rules.dns_seconds
    if kind == "hanging":
        return rules.dns_seconds + rules.download_timeout
    if kind == "no_dns":
        return 2 * rules.dns_timeout
    raise ValueError(f"unknown kind of host: {kind!r}")


def politeness_bound(
    seeded: list[str],
    root_of: dict[str, str],
    kind_of: dict[str, str],
    delays: dict[str, float],
    rules: Rules,
    share: float,
) -> float:
    """Seconds from the first request until `share` of the answering hosts answered."""
    by_root: dict[str, list[str]] = defaultdict(list)
    for name in seeded:
        by_root[root_of[name]].append(name)
    answered: list[float] = []
    for hosts in by_root.values():
        slots = [0.0] * rules.root_concurrency  # when each slot of the root is free again
        for name in hosts:
            start = heapq.heappop(slots)
            kind = kind_of[name]
            done = start + host_seconds(kind, delays.get(name, 0.0), rules)
            if kind == "answering":
                answered.append(done)
            heapq.heappush(slots, done)
    answered.sort()
    return answered[max(1, int(share * len(answered))) - 1]


def root_by_suffix(names: list[str], roots: list[str]) -> dict[str, str]:
    """Each name's root among `roots`: the root it is, or the one it ends in (.root)."""
    known = set(roots)
    found = {}
    for name in names:
        labels = name.split(".")
        found[name] = next(
            ".".join(labels[i:]) for i in range(len(labels)) if ".".join(labels[i:]) in known
        )
    return found
