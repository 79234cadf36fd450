"""The bare spider's own in-flight control and collector tuning (bench/crawl.py's baseline).

The same room as the hosts spider's: a copy of the idea of crawler/extensions/in_flight.py
(InFlightControl) and crawler/extensions/gc_tuning.py, written again here so that the
baseline shares no code with what it measures. Every TICK it moves its limit of
hosts in flight within [MIN_IN_FLIGHT, MAX_IN_FLIGHT]: doubled from
START_IN_FLIGHT while the limit holds the spider back, its CPU is under
CPU_SPARE of a core and the reactor is not late (then raised by a quarter while
it keeps time); cut by a fifth when the reactor is late and the spider busy, by
almost a third over MEMORY_BUDGET_MB; hosts in flight for over STALLED_AFTER
seconds get room beside the limit (not after a cut, nor while the reactor is
late). The downloader's total follows (two requests per host: robots.txt and
the page). The same settings (MAX_IN_FLIGHT, MEMORY_BUDGET_MB) and the same
constants as the crawler's at this commit.
"""

from __future__ import annotations

import gc
import resource
import time

from scrapy import signals

TICK, PROBE = 0.5, 0.05
START_IN_FLIGHT, MIN_IN_FLIGHT, STALLED_AFTER = 128, 64, 5.0
LAG_LOW, LAG_HIGH, CPU_SPARE, CPU_IDLE, SMOOTHING, HEADROOM = 0.1, 0.25, 0.85, 0.6, 0.3, 0.8
REQUESTS_PER_HOST = 2
YOUNG_EVERY, OLDER_EVERY = 20_000, 20  # the crawl's collector thresholds


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


class BareInFlight:
    """A Scrapy extension: the bare spider's limit (`allowed`), moved as the crawler's is."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.maximum = crawler.settings.getint("MAX_IN_FLIGHT")
        self.budget = crawler.settings.getint("MEMORY_BUDGET_MB") * 2**20
        self.limit = self.allowed = min(self.maximum, START_IN_FLIGHT)
        self.growing, self.lag, self.cpu = True, 0.0, CPU_SPARE
        self._lag_max = self._expected = self._cpu = self._wall = 0.0
        self._calls: list = []
        crawler.signals.connect(self.open, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler) -> BareInFlight:
        control = cls(crawler)
        crawler.bare_in_flight = control  # the spider reads `allowed` here
        return control

    def open(self, spider) -> None:
        gc.collect()
        gc.freeze()
        gc.set_threshold(YOUNG_EVERY, OLDER_EVERY, OLDER_EVERY)
        self._cpu, self._wall = process_cpu(), time.monotonic()
        self._apply()
        self._later(PROBE, self._probe)
        self._later(TICK, self.tick)

    def close(self, spider) -> None:
        for call in self._calls:
            if call.active():
                call.cancel()

    def _later(self, delay: float, function) -> None:
        from twisted.internet import reactor

        self._calls = [c for c in self._calls if c.active()]
        self._calls.append(reactor.callLater(delay, function))

    def _probe(self) -> None:
        now = time.monotonic()
        if self._expected:
            self._lag_max = max(self._lag_max, now - self._expected)
        self._expected = now + PROBE
        self._later(PROBE, self._probe)

    def tick(self) -> None:
        now, cpu_now = time.monotonic(), process_cpu()
        cpu = (cpu_now - self._cpu) / max(now - self._wall, 1e-6)
        self._cpu, self._wall = cpu_now, now
        self.lag += SMOOTHING * (self._lag_max - self.lag)
        self.cpu += SMOOTHING * (cpu - self.cpu)
        self._lag_max = 0.0
        started = self.crawler.spider.started
        stalled = sum(1 for then in started.values() if now - then > STALLED_AFTER)
        working, rss, cut = len(started) - stalled, process_rss(), False
        if rss > self.budget:
            self.limit, cut = int(self.limit * 0.7), True
        elif self.lag > LAG_HIGH and self.cpu >= CPU_IDLE:
            self.limit, cut = int(self.limit * 0.8), True
        elif (
            self.cpu < CPU_SPARE
            and self.lag < (LAG_HIGH if self.growing else LAG_LOW)
            and rss < HEADROOM * self.budget
            and working >= 0.9 * self.limit
        ):
            self.limit = self.limit * 2 if self.growing else int(self.limit * 1.25) + 1
        self.growing = self.growing and not cut
        self.limit = min(self.maximum, max(MIN_IN_FLIGHT, self.limit))
        extra = 0 if cut or self.lag > LAG_HIGH else min(stalled, self.limit)
        self.allowed = min(self.maximum, self.limit + extra)
        self._apply()
        self.crawler.stats.max_value("bare/in_flight/limit_peak", self.limit)
        self.crawler.stats.max_value("bare/in_flight/peak", len(started))
        self._later(TICK, self.tick)

    def _apply(self) -> None:
        self.crawler.engine.downloader.total_concurrency = REQUESTS_PER_HOST * self.allowed
