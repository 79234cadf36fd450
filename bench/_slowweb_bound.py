"""The slow world's politeness bound: how soon SHARE of its answering hosts could answer
if claims, the worker and the database took no time at all.

Each root serves at most ROOT_CONCURRENCY hosts at once (the claim's rule), in the order
they were seeded; a host takes its DNS reply (the fastest fakeweb gives), then robots.txt
and its page, each answered after the host's delay; a hanging host holds its root's slot
for DOWNLOAD_TIMEOUT, a host without a DNS reply for two DNS_TIMEOUTs (one retry). No
crawler can beat this without breaking the politeness rule; bench/slowweb.py prints its
rounds against it.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from crawler.core.config import setting
from crawler.core.hostnames import root

REQUESTS_PER_HOST = 2  # robots.txt, then the page it gates


def politeness_bound(
    names: list[str],
    delays: dict[str, float],
    kinds: dict[str, list[str]],
    *,
    share: float,
    dns_seconds: float,
    download_timeout: float,
) -> float:
    """Seconds from the first request until `share` of the answering hosts answered."""
    concurrency = setting("ROOT_CONCURRENCY").default
    blocked_for = {name: download_timeout for name in kinds["hanging"]}
    blocked_for |= {name: 2 * setting("DNS_TIMEOUT").default for name in kinds["no_dns"]}
    by_root: dict[str, list[str]] = defaultdict(list)
    for name in names:
        by_root[root(name)].append(name)
    answered: list[float] = []
    for hosts in by_root.values():
        slots = [0.0] * concurrency  # when each of the root's slots is free again
        for name in hosts:
            start = heapq.heappop(slots)
            if name in blocked_for:
                heapq.heappush(slots, start + blocked_for[name])
                continue
            done = start + dns_seconds + REQUESTS_PER_HOST * delays[name]
            answered.append(done)
            heapq.heappush(slots, done)
    answered.sort()
    return answered[int(share * len(answered)) - 1]
