"""Prometheus metrics: the panel's /metrics (bearer token only) and a worker's extension."""

from __future__ import annotations

import socket
import urllib.request

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from crawler.db.rules import deny_entries
from crawler.extensions.metrics import PrometheusMetrics
from tests.unit.test_panel_support import give_api_token, insert_hosts

pytest_plugins = ["tests.unit.test_panel_support"]


def samples(exposition: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of a Prometheus text exposition."""
    found = {}
    for family in text_string_to_metric_families(exposition):
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


def test_panel_metrics_need_the_api_token(client, anonymous, db):
    for who in (anonymous, client):  # a logged-in browser session is not enough
        refused = who.get("/metrics")
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"] == 'Bearer realm="hostcrawl"'
    assert anonymous.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_panel_metrics_are_the_dashboard_figures(client, db):
    insert_hosts(db, ["a.test", "b.test", "www.c.test"])
    insert_hosts(db, ["ok.test"], outcome="OK")
    deny_entries.add_no_follow(db, ["c.test", "nf.test"])
    deny_entries.upsert_blocked(db, "trap.test", "a trap")
    response = client.get("/metrics", headers=give_api_token(db, "alice", "t0k3n"))
    assert response.status_code == 200
    assert response.content_type == CONTENT_TYPE_LATEST  # Prometheus' text format
    found = samples(response.get_data(as_text=True))
    assert found[("hostcrawl_hosts_known", ())] == 3  # not the 3 entries nor www.c.test
    assert found[("hostcrawl_queue_due", ())] == 3  # www.c.test is under c.test
    assert found[("hostcrawl_out_of_routing", ())] == 1
    assert found[("hostcrawl_entries", (("rule", "no_follow"),))] == 2
    assert found[("hostcrawl_entries", (("rule", "blocked"),))] == 1
    assert found[("hostcrawl_hosts_by_outcome", (("outcome", "OK"),))] == 1
    assert found[("hostcrawl_blocks_last_hour", ())] == 1
    assert found[("hostcrawl_counts_estimated", ())] == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_worker_without_metrics_port_serves_nothing():
    crawler = get_crawler(Spider, {"METRICS_PORT": 0})
    with pytest.raises(NotConfigured):
        PrometheusMetrics.from_crawler(crawler)


def test_a_worker_serves_its_stats_as_metrics():
    port = free_port()
    crawler = get_crawler(Spider, {"METRICS_PORT": port, "WORKER_NAME": "worker-2@vm"})
    crawler._apply_settings()
    metrics = PrometheusMetrics.from_crawler(crawler)
    stats = crawler.stats
    stats.inc_value("hostcrawl/hosts/outcome/OK", 5)
    stats.inc_value("hostcrawl/hosts/outcome/DNS_NXDOMAIN", 2)
    stats.inc_value("hostcrawl/hosts/links_saved", 17)
    stats.inc_value("hostcrawl/traps/blocked")
    stats.inc_value("hostcrawl/traps/deferred", 3)
    stats.inc_value("hostcrawl/blacklist/filtered/no_follow", 4)
    stats.set_value("hostcrawl/in_flight", 300)  # what crawler/extensions/in_flight.py records
    stats.set_value("hostcrawl/in_flight/limit", 512)
    stats.set_value("hostcrawl/reactor_lag_ms", 40)
    stats.set_value("hostcrawl/rss_mb", 210)
    stats.inc_value("hostcrawl/found/resources", 6)
    stats.inc_value("hostcrawl/found/certificate", 1)
    metrics.claims = 9
    spider = Spider("probe")
    metrics.open(spider)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            found = samples(response.read().decode())
    finally:
        metrics.close(spider)
    assert found[("hostcrawl_worker", (("worker", "worker-2@vm"),))] == 1  # which worker
    assert found[("hostcrawl_pages_total", ())] == 7
    assert found[("hostcrawl_outcomes_total", (("outcome", "OK"),))] == 5
    assert found[("hostcrawl_outcomes_total", (("outcome", "DNS_NXDOMAIN"),))] == 2
    assert found[("hostcrawl_claims_total", ())] == 9
    assert found[("hostcrawl_links_saved_total", ())] == 17
    assert found[("hostcrawl_blocks_total", ())] == 1
    assert found[("hostcrawl_deferred_blocks_total", ())] == 3
    assert found[("hostcrawl_denied_total", (("rule", "no_follow"),))] == 4
    assert found[("hostcrawl_found_total", (("source", "resources"),))] == 6
    assert found[("hostcrawl_found_total", (("source", "certificate"),))] == 1
    assert found[("hostcrawl_denylist_entries", ())] == 0  # no deny list loaded here
    assert found[("hostcrawl_in_flight", ())] == 300
    assert found[("hostcrawl_in_flight_limit", ())] == 512
    assert found[("hostcrawl_reactor_lag_seconds", ())] == pytest.approx(0.04)
    assert found[("hostcrawl_resident_memory_bytes", ())] == 210 * 2**20
    with pytest.raises(OSError):  # closed with the spider
        urllib.request.urlopen(url, timeout=2)
