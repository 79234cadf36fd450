"""/metrics: the panel's Prometheus metrics, for the API's bearer token only.

The same cheap figures as the dashboard strip (`pages.dashboard.totals`:
counted on a small database, the planner's estimates on a big one; the deny
entries always counted), the crawl's counts now as the health row and the banner
show them (crawler.db.crawl.counts), plus the blocks of the last hour from the change
log (an index range). prometheus_client writes the exposition format.

    hostcrawl_hosts_known                 hosts the main list shows (none under an entry)
    hostcrawl_queue_due                   hosts due now (the queue depth a worker sees)
    hostcrawl_hosts_held_back             hosts an outage holds back now (distinct hosts)
    hostcrawl_hosts_in_flight             hosts claimed and being tried now (all workers')
    hostcrawl_failed_recently{layer}      failures in the last 5 minutes, by layer (tries an
                                          outage held back among them)
    hostcrawl_tried_recently              hosts tried in those minutes (settled or held back)
    hostcrawl_out_of_routing              hosts under a deny entry
    hostcrawl_entries{rule}               deny entries by rule
    hostcrawl_hosts_by_outcome{outcome}   hosts the main list shows, by last outcome
    hostcrawl_blocks_last_hour            blocks (crawler or operator) in the last hour
    hostcrawl_counts_estimated            1 while the figures are estimates
"""

from __future__ import annotations

from flask import Blueprint, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import text

from crawler.core.outcomes import LAYERS
from crawler.db.crawl import counts
from crawler.db.operators.host_filter import NEVER_CRAWLED
from webpanel.api import authenticate
from webpanel.queries import dashboard
from webpanel.view_helpers import engine

bp = Blueprint("metrics", __name__)
bp.before_request(authenticate)  # the API's: Authorization: Bearer <token>

BLOCKS_LAST_HOUR = text(
    "SELECT count(*) FROM change_log WHERE at > now() - interval '1 hour' AND action = 'block'"
)


class Figures:
    """A one-scrape collector over figures read once."""

    def __init__(self, figures: dict, crawl: counts.Now, blocks: int) -> None:
        self.figures, self.crawl, self.blocks = figures, crawl, blocks

    def collect(self):
        f, crawl = self.figures, self.crawl
        for name, help_text, value in (
            ("hostcrawl_hosts_known", "Hosts the main list shows.", f["hosts_known"]),
            ("hostcrawl_queue_due", "Hosts due now.", crawl.due_now),
            ("hostcrawl_hosts_held_back", "Hosts an outage holds back now.", crawl.held_back),
            ("hostcrawl_hosts_in_flight", "Hosts claimed and being tried.", crawl.in_flight),
            ("hostcrawl_tried_recently", "Hosts tried, last 5 min.", crawl.failed.tried),
            ("hostcrawl_out_of_routing", "Hosts under a deny entry.", f["out_of_routing"]),
            ("hostcrawl_blocks_last_hour", "Blocks in the last hour.", self.blocks),
            ("hostcrawl_counts_estimated", "1: planner estimates.", int(f["estimated"])),
        ):
            yield GaugeMetricFamily(name, help_text, value=value)
        entries = GaugeMetricFamily("hostcrawl_entries", "Deny entries.", labels=["rule"])
        for rule in ("blocked", "no_follow"):
            entries.add_metric([rule], f[rule])
        yield entries
        failed = GaugeMetricFamily(
            "hostcrawl_failed_recently", "Failures, last 5 min, by layer.", labels=["layer"]
        )
        for layer in LAYERS:
            failed.add_metric([layer], crawl.failed.by_layer[layer])
        yield failed
        outcomes = GaugeMetricFamily(
            "hostcrawl_hosts_by_outcome", "Hosts by last outcome.", labels=["outcome"]
        )
        for outcome, n in f["outcomes"]:
            outcomes.add_metric([outcome or NEVER_CRAWLED], n)
        yield outcomes


@bp.get("/metrics")
def metrics() -> Response:
    with engine().connect() as conn:
        figures = dashboard.totals(conn)
        crawl = counts.now(conn)
        blocks = conn.execute(BLOCKS_LAST_HOUR).scalar_one()
    registry = CollectorRegistry()
    registry.register(Figures(figures, crawl, blocks))
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
