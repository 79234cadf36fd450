"""What the crawl's resolver did for its hosts (crawler/network/resolver.py keeps one).

The lookups in flight, now and at their peak (the resolver's width: lookups do not queue
behind each other), the questions that went to a server, the cache's hits, and how long
each host waited for its address. The in-flight control writes them to the stats
(`hostcrawl/dns/...`) every tick, the waits' percentiles at the end; bench/slowweb.py
prints them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

WAITS_KEPT = 100_000  # the latest waits kept for the percentiles


@dataclass
class DnsFigures:
    """What the resolver did for the crawl: its width, its cache, the hosts' waits."""

    in_flight: int = 0  # lookups asked and not answered yet
    in_flight_peak: int = 0
    lookups: int = 0  # lookups that went to the server (not the cache)
    cache_hits: int = 0
    waits: int = 0  # addresses asked for (getHostByName), the cache's hits among them
    wait_seconds: float = 0.0  # their waits, summed
    wait_max: float = 0.0
    # Each wait (ms), the latest WAITS_KEPT of them: the percentiles' sample.
    sample: deque = field(default_factory=lambda: deque(maxlen=WAITS_KEPT))

    def asked(self) -> None:
        self.lookups += 1
        self.in_flight += 1
        self.in_flight_peak = max(self.in_flight_peak, self.in_flight)

    def answered(self) -> None:
        self.in_flight -= 1

    def waited(self, seconds: float) -> None:
        self.waits += 1
        self.wait_seconds += seconds
        self.wait_max = max(self.wait_max, seconds)
        self.sample.append(seconds * 1000)

    def stats(self, percentiles: bool = False) -> dict[str, float]:
        """The figures as stats (`hostcrawl/dns/...`); the waits' p50 and p95 if asked
        (a sort of the sample: at the end of a crawl, not every tick)."""
        figures = {
            "in_flight": self.in_flight,
            "in_flight_peak": self.in_flight_peak,
            "lookups": self.lookups,
            "cache_hits": self.cache_hits,
            "waits": self.waits,
            "wait_ms/total": round(self.wait_seconds * 1000),
            "wait_ms/max": round(self.wait_max * 1000),
        }
        if percentiles and self.sample:
            ordered = sorted(self.sample)
            for name, share in (("p50", 0.5), ("p95", 0.95)):
                figures[f"wait_ms/{name}"] = round(ordered[int(share * (len(ordered) - 1))])
        return {f"hostcrawl/dns/{name}": value for name, value in figures.items()}
