"""The Grafana dashboard (docker/grafana): every metric its queries use is one a real
crawler worker serves on /metrics, and it reads from the data source provisioned beside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.e2e.conftest import CrawlerProcess, crawl_settings, wait_until
from tests.fakeweb import World
from tests.unit.test_metrics import free_port
from tests.unit.test_metrics_worker import scrape

GRAFANA = Path(__file__).resolve().parents[2] / "docker" / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "hostcrawl.json"
METRIC = re.compile(r"\bhostcrawl_[a-z_]+\b")


def queries() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel.get("targets", [])]


def test_the_dashboard_shows_what_operators_ask_for():
    dashboard = json.loads(DASHBOARD.read_text())
    titles = " ".join(panel["title"] for panel in dashboard["panels"]).lower()
    for shown in ("pages", "discoveries", "outcomes", "queue", "in flight", "workers", "database"):
        assert shown in titles, shown
    source = yaml.safe_load((GRAFANA / "provisioning/datasources/prometheus.yml").read_text())
    uid = source["datasources"][0]["uid"]
    assert source["datasources"][0]["url"] == "http://prometheus:9090"  # compose's service
    used = {t["datasource"]["uid"] for p in dashboard["panels"] for t in p.get("targets", [])}
    assert used == {uid}


def test_every_metric_the_dashboard_queries_is_on_a_real_workers_metrics(
    db, fakeweb_factory, tmp_path
):
    world = World(seed=7)
    names = world.graph(40, roots=["metric-a.test", "metric-b.test"], links_per_page=4)
    # A host that redirects under a no_follow entry: a request the deny list refuses.
    world.redirect("moved.metric-a.test", "http://denied.metric-b.test/")
    world.site("denied.metric-b.test")
    world.pages[names[0]]["/"]["links"].append("http://moved.metric-a.test/")
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(db, ["denied.metric-b.test"])
    queue.seed(db, [names[0]])
    port = free_port()
    settings = crawl_settings(web, CLOSE_WHEN_DRAINED=0, METRICS_PORT=port)
    worker = CrawlerProcess(settings, tmp_path / "crawler.log")
    try:
        served = wait_until(
            lambda: (
                (s := scrape(port))
                and s.get(("hostcrawl_pages_total", ()), 0) >= len(names) + 1
                and s.get(("hostcrawl_database_heartbeat_seconds", ()), 0) > 0
                and s
            ),
            120,
            "the worker to crawl every page and beat once",
        )
    finally:
        worker.stop()
    names_served = {name for name, _ in served}
    used = {name for expr in queries() for name in METRIC.findall(expr)}
    assert used and used <= names_served, sorted(used - names_served)
    assert served[("hostcrawl_database_up", ())] == 1
