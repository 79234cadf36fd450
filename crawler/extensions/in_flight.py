"""How many hosts a worker keeps in flight: sized by the worker itself, up to MAX_IN_FLIGHT.

On a fast web the CPU is the limit; on the real web most of a request is
waiting (answers in seconds, hosts that hang, names that never resolve), and
a fixed number in flight leaves the machine idle. A Scrapy extension
(installed by the add-on) looks every TICK seconds at what the worker has to
spare and moves the limit:

- raised while the limit is what holds the worker back (the spider has about
  that many hosts in flight) and the memory is under BUDGET_HEADROOM of
  MEMORY_BUDGET_MB: until the first cut, straight to the hosts due (the
  spider counts them) or doubled if that is more, as long as the reactor is
  not late (LAG_HIGH), whatever the CPU (a slow web's first seconds are bursts
  of handshakes: waiting for a prompt reactor, then for a CPU under CPU_SPARE,
  held the limit at 128-256 for seconds while 600 hosts were due; a worker
  that is CPU-bound makes its reactor late, and that cuts); after it, by a
  quarter while its CPU, averaged over the last seconds, is under CPU_SPARE of
  a core and the reactor keeps time (its lag under LAG_LOW);
- kept while the CPU is busy but the reactor keeps time: a worker waiting on
  slow hosts does its work in bursts (a claim's handshakes, a batch of
  answers), and cutting on each burst held the slow web's crawl to half its
  speed;
- cut by a fifth when it is CPU-bound (the reactor, averaged, later than
  LAG_HIGH: pages wait and timeouts fire late, and the worker itself takes
  over CPU_IDLE of a core), by almost a third when the memory is over its
  budget;
- kept while the reactor is late but the worker mostly idle (under CPU_IDLE):
  the machine's other processes hold the cores, and fewer hosts in flight
  would not give the worker its turn sooner (on a two-core machine shared with
  busy neighbours that cut took the slow web's limit down to 67, the worker at a
  quarter of a core, and its hosts waited behind the limit);
- always within [MIN_IN_FLIGHT, MAX_IN_FLIGHT].

Hosts in flight for more than STALLED_AFTER seconds (a host that accepted and
hangs until DOWNLOAD_TIMEOUT, a name whose DNS never answers) wait on the web,
not on the worker: they cost a socket and some memory, no CPU. They do not
count against the limit (up to as many again as the limit, and never past
MAX_IN_FLIGHT in all), except after a cut or while the reactor is late (then
they may be waiting on the worker itself): on the slow web's 7% of hanging
hosts they held a third of a limit of 300, and the roots behind them waited.

The spider claims up to the limit, read through the crawl's shared state
(crawler/shared.py: the hosts in flight are the spider's, the room is ours) and the downloader
may run two requests per host (robots.txt and the page it gates). The figures
go to the stats (`hostcrawl/in_flight...`, `hostcrawl/reactor_lag_ms...`,
`hostcrawl/rss_mb...`), the Prometheus metrics and a line in the log every
LOGSTATS_INTERVAL seconds. Over MEMORY_BUDGET_MB, a warning says by how much,
whether lowering the limit can still keep the budget (not at MIN_IN_FLIGHT) and
what the worker holds; at once when it crosses, then with each of those lines.
"""

from __future__ import annotations

import logging
import os
import resource
import time

from scrapy import signals

from crawler.core.in_flight_sizing import BUDGET_HEADROOM
from crawler.core.words import counted
from crawler.extensions.open_files import OPEN_FILES_STAT, open_files_limit
from crawler.shared import CrawlShared, InFlightRoom

log = logging.getLogger(__name__)

TICK = 0.5  # seconds between decisions
PROBE = 0.05  # seconds between reactor lag probes
START_IN_FLIGHT = 128
MIN_IN_FLIGHT = 64  # what a worker kept in flight before it sized itself
# Seconds in flight after which a host is waiting on the web (a slow host answers in one or
# two; CONNECT_TIMEOUT's default is 5), not on the worker.
STALLED_AFTER = 5.0
LAG_LOW = 0.1  # seconds: the reactor keeps time
LAG_HIGH = 0.25  # seconds: the reactor is late (the machine has no time to spare)
CPU_SPARE = 0.85  # share of one core under which the worker has time for more hosts
CPU_IDLE = 0.6  # share of one core under which a late reactor is not the worker's doing
SMOOTHING = 0.3  # weight of a tick in the averages of CPU and lag (~2 s of memory)
REQUESTS_PER_HOST = 2  # robots.txt and the page request it holds back
LATE_MAX_STAT = "hostcrawl/reactor_late_ms/max"  # the latest timer of the crawl, in ms
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """This process's resident memory now (Linux /proc), else its peak so far."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def peak_rss_bytes() -> int:
    """This process's peak resident memory: VmHWM, its own image's. ru_maxrss is not: Linux
    keeps it across exec, so a worker started by a big process reported that one's peak."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def next_limit(
    limit: int,
    in_flight: int,
    lag: float,
    cpu: float,
    rss: int,
    budget: int,
    growing: bool,
    due: int = 0,
) -> tuple[int, str]:
    """The next limit and why: "memory", "cpu", "raise" or "" (kept).

    `lag` and `cpu` are averages over the last seconds. A late reactor cuts a
    worker that takes the CPU (over CPU_IDLE of a core), even if others share the
    machine (a database, a fakeweb): more in flight only makes it later. `due`: the
    hosts in flight and those due when the spider last counted; while growing, a raise
    goes straight there if that is more than doubling (2,400 hosts due took doubling from
    128 over two seconds, the hosts due waiting meanwhile).
    """
    if rss > budget:
        return int(limit * 0.7), "memory"
    if lag > LAG_HIGH:
        return (int(limit * 0.8), "cpu") if cpu >= CPU_IDLE else (limit, "")
    spare = lag < LAG_HIGH if growing else cpu < CPU_SPARE and lag < LAG_LOW
    if spare and rss < BUDGET_HEADROOM * budget and in_flight >= 0.9 * limit:
        return (max(limit * 2, due) if growing else int(limit * 1.25) + 1), "raise"
    return limit, ""


def allowed(limit: int, stalled: int, maximum: int) -> int:
    """Hosts a worker may hold: its limit, and those stalled beside it (at most as many
    again), never over MAX_IN_FLIGHT."""
    return min(maximum, limit + min(stalled, limit))


def over_budget(rss: int, budget: int, limit: int, holdings: dict[str, int]) -> str:
    """What a worker over its memory budget says: by how much, what lowering its hosts
    in flight can still do, and what it holds."""
    if limit > MIN_IN_FLIGHT:
        doing = f"its limit of hosts in flight is cut to {limit}"
    else:
        doing = (
            f"its limit of hosts in flight is at its floor ({MIN_IN_FLIGHT}): the rest is"
            " not the hosts in flight, and the worker cannot keep the budget by itself"
        )
    held = ", ".join(f"{what} {count}" for what, count in holdings.items())
    return (
        f"hostcrawl: RSS {rss / 2**20:.0f} MB is over MEMORY_BUDGET_MB"
        f" ({budget / 2**20:.0f} MB) by {(rss - budget) / 2**20:.0f} MB; {doing};"
        f" it holds: {held or 'nothing counted'}"
    )


def averaged(average: float, sample: float) -> float:
    """An exponential moving average: SMOOTHING of the new sample."""
    return average + SMOOTHING * (sample - average)


class InFlightControl:
    """The worker's limit of hosts in flight, moved by what it has to spare."""

    @classmethod
    def from_crawler(cls, crawler) -> InFlightControl:
        return cls(crawler)

    def __init__(self, crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        # The hosts in flight (the spider's) and the room it is given (ours), shared.
        self.shared = CrawlShared.of(crawler)
        self.maximum = settings.getint("MAX_IN_FLIGHT")
        self.budget = settings.getint("MEMORY_BUDGET_MB") * 2**20
        self.log_every = settings.getfloat("LOGSTATS_INTERVAL")
        self.limit = min(self.maximum, START_IN_FLIGHT)
        self.growing = True  # doubling until the first cut, as TCP's slow start
        # Averaged over ticks, from a start that neither cuts nor raises: the burst of
        # a first claim (its handshakes all at once) is not a worker without time to
        # spare, nor is the start a worker with time to spare until the CPU says so
        # (from CPU_SPARE, one tick under it does; from a full core it took three).
        self.lag, self.cpu = 0.0, CPU_SPARE
        self.stalled = 0  # hosts in flight for over STALLED_AFTER s (not counted)
        self.allowed = self.limit  # hosts the worker may hold: the limit and the stalled
        self.shared.room = InFlightRoom(self.limit, self.allowed, self.growing)
        self._calls: list = []
        self._lag_max = 0.0
        self._expected = 0.0
        self._cpu = self._wall = 0.0
        self._logged = 0.0
        self._over = False  # RSS over the budget at the last tick
        crawler.signals.connect(self.open, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    def in_flight(self) -> int:
        return len(self.shared.in_flight)

    def count_stalled(self, now: float) -> int:
        """Hosts in flight for over STALLED_AFTER s."""
        return sum(1 for then in self.shared.in_flight.values() if now - then > STALLED_AFTER)

    def open(self, spider) -> None:
        self._cpu, self._wall = cpu_seconds(), time.monotonic()
        self._logged = self._wall
        stats = self.crawler.stats
        stats.max_value("hostcrawl/in_flight/limit_peak", self.limit)
        stats.set_value("hostcrawl/in_flight/maximum", self.maximum)
        # Before any host: what a host in flight costs is measured from here (bench/slowweb.py).
        stats.set_value("hostcrawl/rss_mb/start", round(rss_bytes() / 2**20))
        stats.set_value(OPEN_FILES_STAT, open_files_limit())
        self._apply()
        self._probe()
        self._schedule(TICK, self.tick)

    def close(self, spider) -> None:
        # The peak by the kernel's count: a tick every TICK s can miss a burst's.
        self.crawler.stats.max_value("hostcrawl/rss_mb/peak", round(peak_rss_bytes() / 2**20))
        # The lateness since the last tick (a crawl shorter than one has had none).
        self.crawler.stats.max_value(LATE_MAX_STAT, round(self._lag_max * 1000))
        self._record_dns(percentiles=True)
        for call in self._calls:
            if call.active():
                call.cancel()
        self._calls.clear()

    def _schedule(self, delay: float, function) -> None:
        from twisted.internet import reactor

        self._calls = [c for c in self._calls if c.active()]
        self._calls.append(reactor.callLater(delay, function))

    def _probe(self) -> None:
        """Reactor lag: how late a timer fires (the loop was busy with other work)."""
        now = time.monotonic()
        if self._expected:
            self._lag_max = max(self._lag_max, now - self._expected)
        self._expected = now + PROBE
        self._schedule(PROBE, self._probe)

    def tick(self) -> None:
        now, cpu_now = time.monotonic(), cpu_seconds()
        cpu = (cpu_now - self._cpu) / max(now - self._wall, 1e-6)
        self._cpu, self._wall = cpu_now, now
        lag, self._lag_max = self._lag_max, 0.0
        # The latest a timer ever fired, unsmoothed: one response read in the loop for
        # seconds shows here, not in the averaged lag (bench/hostile_crawl.py reads it).
        self.crawler.stats.max_value(LATE_MAX_STAT, round(lag * 1000))
        self.lag, self.cpu = averaged(self.lag, lag), averaged(self.cpu, cpu)
        rss = rss_bytes()
        self.stalled = self.count_stalled(now)
        # The hosts that hold the worker back: not those waiting on the web.
        in_flight = self.in_flight()
        working = in_flight - self.stalled
        limit, why = next_limit(
            self.limit,
            working,
            self.lag,
            self.cpu,
            rss,
            self.budget,
            self.growing,
            self.shared.due - self.stalled,
        )
        cut = why in ("cpu", "memory")
        if cut:
            self.growing = False
        self.limit = min(self.maximum, max(MIN_IN_FLIGHT, limit))
        # A late reactor: the hosts may be waiting on this process, not on the web.
        waits_on_us = cut or self.lag > LAG_HIGH
        self.allowed = (
            self.limit if waits_on_us else allowed(self.limit, self.stalled, self.maximum)
        )
        self._apply()
        self._record(in_flight, rss, self.cpu)
        if why in ("cpu", "memory"):
            log.debug("in-flight limit %d (%s)", self.limit, why)
        over = rss > self.budget
        if now - self._logged >= self.log_every or (over and not self._over):
            self._logged = now
            log.info(
                "hostcrawl: %s in flight, %d of them stalled (limit %d of %d),"
                " reactor lag %.0f ms, CPU %.0f%%, RSS %.0f MB (budget %.0f MB)",
                counted(in_flight, "host"),
                self.stalled,
                self.limit,
                self.maximum,
                self.lag * 1000,
                self.cpu * 100,
                rss / 2**20,
                self.budget / 2**20,
            )
            if over:
                log.warning("%s", over_budget(rss, self.budget, self.limit, self.holdings()))
        self._over = over
        self._schedule(TICK, self.tick)

    def holdings(self) -> dict[str, int]:
        """What the worker holds now, of what grows with the crawl (counted cheaply)."""
        crawler, held = self.crawler, {}
        held["hosts in flight"] = self.in_flight()
        engine = getattr(crawler, "engine", None)
        downloader = getattr(engine, "downloader", None)
        held["requests in the downloader"] = len(getattr(downloader, "active", ()))
        held["hosts held back by an outage"] = self.shared.held_back()
        from twisted.internet import reactor

        cached = getattr(reactor.resolver, "cached", None)
        if cached is not None:
            held["DNS answers cached"] = cached()
        return held

    def _apply(self) -> None:
        """The spider and the downloader follow: two requests per host may be active."""
        self.shared.room = InFlightRoom(self.limit, self.allowed, self.growing)
        self.crawler.engine.downloader.total_concurrency = REQUESTS_PER_HOST * self.allowed

    def _record(self, in_flight: int, rss: int, cpu: float) -> None:
        stats = self.crawler.stats
        stats.set_value("hostcrawl/in_flight", in_flight)
        stats.max_value("hostcrawl/in_flight/peak", in_flight)
        stats.set_value("hostcrawl/in_flight/limit", self.limit)
        stats.set_value("hostcrawl/in_flight/stalled", self.stalled)
        stats.max_value("hostcrawl/in_flight/stalled_peak", self.stalled)
        stats.max_value("hostcrawl/in_flight/limit_peak", self.limit)
        stats.set_value("hostcrawl/reactor_lag_ms", round(self.lag * 1000))
        stats.max_value("hostcrawl/reactor_lag_ms/peak", round(self.lag * 1000))
        stats.set_value("hostcrawl/rss_mb", round(rss / 2**20))
        stats.max_value("hostcrawl/rss_mb/peak", round(rss / 2**20))
        stats.set_value("hostcrawl/cpu_percent", round(cpu * 100))
        self._record_dns()

    def _record_dns(self, percentiles: bool = False) -> None:
        """The resolver's figures (crawler/network/dns_figures.py), when it is ours."""
        from twisted.internet import reactor

        figures = getattr(reactor.resolver, "figures", None)
        if figures is not None:
            for name, value in figures.stats(percentiles).items():
                self.crawler.stats.set_value(name, value)
