"""Prometheus metrics of one crawler worker, on METRICS_PORT (off when 0, the default).

A Scrapy extension (installed by the add-on). The figures are read from the
crawl's own stats when Prometheus scrapes, so there is one count of each
thing: what `Dumping Scrapy stats` prints at the end is what was exposed.
The exposition is prometheus_client's (its own registry and HTTP server);
nothing here writes the text format by hand.

    hostcrawl_worker{worker}              1, labelled with the worker's name (WORKER_NAME)
    hostcrawl_pages_total                 front pages settled (any outcome); rate() = pages/s
    hostcrawl_outcomes_total{outcome}     the same, by outcome
    hostcrawl_claims_total                hosts claimed (one front-page request each)
    hostcrawl_links_saved_total           new hostnames saved from pages
    hostcrawl_found_total{source}         hostnames pages revealed, by source group
    hostcrawl_denied_total{rule}          requests refused by a deny entry
    hostcrawl_blocks_total                trap roots this worker blocked
    hostcrawl_deferred_blocks_total       blocks deferred by the self-check
    hostcrawl_denylist_entries            entries in this worker's deny list
    hostcrawl_world_unproven_since_seconds  when the world stopped being proven to answer
                                          this worker (Unix time; 0 while a canary answers)
    hostcrawl_in_flight                   hosts in flight now
    hostcrawl_in_flight_limit             the worker's own limit of them (up to MAX_IN_FLIGHT)
    hostcrawl_reactor_lag_seconds         how late the event loop ran a timer, last tick
    hostcrawl_resident_memory_bytes       the worker's resident memory (RSS)
    hostcrawl_queue_due                   hosts due now, the whole queue's (each heartbeat)
    hostcrawl_database_heartbeat_seconds  how long the database took to write the last one
    hostcrawl_database_up                 0 while the worker waits out a database outage
    hostcrawl_outage_retried_total        failures held back while the world did not answer
    hostcrawl_memory_given_back_total     times it gave memory back after a burst

Several workers on one machine need one port each: `make run` gives its N workers
METRICS_PORT, METRICS_PORT+1, ... (docs/deployment.md, "Metrics").
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler.db.server.retry import OUTAGE
from crawler.shared import UNPROVEN_SINCE, CrawlShared

log = logging.getLogger(__name__)

OUTCOME_PREFIX = "hostcrawl/hosts/outcome/"
DENIED_PREFIX = "hostcrawl/blacklist/filtered/"
# Gauges the in-flight control (extensions/in_flight.py) keeps in the stats: name, key, scale.
GAUGES = {
    "hostcrawl_in_flight": ("hostcrawl/in_flight", 1, "Hosts in flight now."),
    "hostcrawl_in_flight_limit": ("hostcrawl/in_flight/limit", 1, "The worker's in-flight limit."),
    "hostcrawl_reactor_lag_seconds": (
        "hostcrawl/reactor_lag_ms",
        0.001,
        "How late the event loop ran a timer (last tick).",
    ),
    "hostcrawl_resident_memory_bytes": ("hostcrawl/rss_mb", 2**20, "Resident memory (RSS)."),
    # Read at each heartbeat (crawler/extensions/heartbeat.py).
    "hostcrawl_queue_due": ("hostcrawl/queue/due", 1, "Hosts due now (the whole queue's)."),
    "hostcrawl_database_heartbeat_seconds": (
        "hostcrawl/database/heartbeat_ms",
        0.001,
        "How long the database took to write this worker's last heartbeat.",
    ),
}
FOUND_PREFIX = "hostcrawl/found/"
SIMPLE_COUNTERS = {
    "hostcrawl_links_saved": ("hostcrawl/hosts/links_saved", "New hostnames saved from pages."),
    "hostcrawl_blocks": ("hostcrawl/traps/blocked", "Trap roots this worker blocked."),
    "hostcrawl_deferred_blocks": ("hostcrawl/traps/deferred", "Blocks deferred by the self-check."),
    "hostcrawl_outage_retried": (
        "hostcrawl/outage/retried",
        "Failures held back while the world did not answer (tried again, not settled).",
    ),
    "hostcrawl_memory_given_back": (
        "hostcrawl/memory/given_back",
        "Times the worker gave memory back after a burst (crawler/extensions/giveback.py).",
    ),
}


class StatsCollector:
    """Reads a crawl's stats (and its claims and deny list) whenever it is scraped."""

    def __init__(self, crawler, metrics: PrometheusMetrics) -> None:
        self.crawler = crawler
        self.shared = CrawlShared.of(crawler)
        self.metrics = metrics

    def collect(self):
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        outcomes = CounterMetricFamily(
            "hostcrawl_outcomes", "Front pages settled, by outcome.", labels=["outcome"]
        )
        for key, value in sorted(stats.items()):
            if key.startswith(OUTCOME_PREFIX):
                outcomes.add_metric([key.removeprefix(OUTCOME_PREFIX)], value)
        worker = GaugeMetricFamily("hostcrawl_worker", "This worker's name.", labels=["worker"])
        worker.add_metric([self.shared.worker], 1)
        yield worker
        yield CounterMetricFamily(
            "hostcrawl_pages", "Front pages settled (any outcome).", value=pages_settled(stats)
        )
        yield outcomes
        yield CounterMetricFamily("hostcrawl_claims", "Hosts claimed.", value=self.metrics.claims)
        denied = CounterMetricFamily(
            "hostcrawl_denied", "Requests refused by a deny entry.", labels=["rule"]
        )
        for key, value in sorted(stats.items()):
            if key.startswith(DENIED_PREFIX):
                denied.add_metric([key.removeprefix(DENIED_PREFIX)], value)
        yield denied
        yield labelled(
            stats,
            FOUND_PREFIX,
            CounterMetricFamily(
                "hostcrawl_found",
                "Hostnames pages revealed (after the deny list), by source group.",
                labels=["source"],
            ),
        )
        for name, (key, help_text) in SIMPLE_COUNTERS.items():
            yield CounterMetricFamily(name, help_text, value=stats.get(key, 0))
        for name, (key, scale, help_text) in GAUGES.items():
            yield GaugeMetricFamily(name, help_text, value=stats.get(key, 0) * scale)
        yield GaugeMetricFamily(
            "hostcrawl_denylist_entries",
            "Entries in this worker's deny list.",
            value=self.shared.denylist_entries(),
        )
        since = stats.get(UNPROVEN_SINCE)
        yield GaugeMetricFamily(
            "hostcrawl_world_unproven_since_seconds",
            "Since when no canary has answered this worker (Unix time; 0 while one does):"
            " blocks are held and failing hosts tried again, not settled.",
            value=since.timestamp() if since else 0,
        )
        yield GaugeMetricFamily(
            "hostcrawl_database_up",
            "0 while this worker waits for the database (an outage), else 1.",
            value=0 if OUTAGE.since is not None else 1,
        )


def pages_settled(stats: dict) -> int:
    """Front pages settled so far, any outcome: the crawl's pages count."""
    return sum(v for k, v in stats.items() if k.startswith(OUTCOME_PREFIX))


def labelled(stats: dict, prefix: str, family: CounterMetricFamily) -> CounterMetricFamily:
    """`family` with one sample per stats key under `prefix`, labelled by the rest of the key."""
    for key, value in sorted(stats.items()):
        if key.startswith(prefix):
            family.add_metric([key.removeprefix(prefix)], value)
    return family


class PrometheusMetrics:
    """Serves the worker's metrics while the spider runs."""

    def __init__(self, crawler, port: int, address: str) -> None:
        self.crawler = crawler
        self.port, self.address = port, address
        self.claims = 0
        self.registry = CollectorRegistry()
        self.registry.register(StatsCollector(crawler, self))
        self.server = None
        crawler.signals.connect(self.open, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)
        crawler.signals.connect(self.scheduled, signal=signals.request_scheduled)

    @classmethod
    def from_crawler(cls, crawler):
        port = crawler.settings.getint("METRICS_PORT")
        if not port:
            raise NotConfigured("METRICS_PORT is 0")
        return cls(crawler, port, crawler.settings.get("METRICS_ADDRESS"))

    def open(self, spider) -> None:
        self.server, _ = start_http_server(self.port, self.address, registry=self.registry)
        log.info("metrics on http://%s:%d/metrics", self.address, self.port)

    def close(self, spider) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def scheduled(self, request, spider) -> None:
        """A claimed host's first request (not its robots.txt, not a fallback) is a claim."""
        meta = request.meta
        if (
            meta.get("hostcrawl_hostname")
            and "hostcrawl_scheme" in meta
            and not meta.get("hostcrawl_fallback")
        ):
            self.claims += 1
