"""The dashboard's charts: hosts discovered and crawled per hour by outcome,
and the biggest roots, drawn as SVG with axes, labels and a legend."""

from __future__ import annotations

from crawler.db import queue
from crawler.db.pages import dashboard
from crawler.db.queue import Crawled, CrawlResult
from webpanel.charts import nice_top, roots_chart, time_chart

pytest_plugins = ["tests.unit.test_panel_support"]


def crawl_some(db) -> None:
    queue.save_hosts(db, [f"h{i}.big.test" for i in range(12)] + ["a.small.test"])
    queue.finish_many(
        db,
        [Crawled(f"h{i}.big.test", CrawlResult("OK")) for i in range(5)]
        + [Crawled("h5.big.test", CrawlResult("DNS_NXDOMAIN"))],
    )


def test_the_timeline_counts_this_hour(db):
    crawl_some(db)
    with db.connect() as conn:
        timeline = dashboard.timeline(conn)
        top = dashboard.top_roots(conn)
    assert len(timeline.hours) == 24
    assert timeline.discovered[-1] == 13 and sum(timeline.discovered) == 13
    assert timeline.crawled["OK"][-1] == 5 and timeline.crawled["NETWORK"][-1] == 1
    assert timeline.crawled_total[-1] == 6
    assert top == [("big.test", 12), ("small.test", 1)]


def test_each_crawl_counts_in_its_hour_and_a_known_name_is_no_discovery(db):
    """host_hours (migration 0009) counts work done: a recrawl counts again, under its new
    outcome, and saving names already known discovers nothing."""
    crawl_some(db)
    queue.save_hosts(db, ["h0.big.test", "a.small.test"])
    queue.finish_many(db, [Crawled("h0.big.test", CrawlResult("TCP_REFUSED"))])
    with db.connect() as conn:
        timeline = dashboard.timeline(conn)
    assert sum(timeline.discovered) == 13
    assert timeline.crawled["OK"][-1] == 5 and timeline.crawled["NETWORK"][-1] == 2
    assert timeline.crawled_total[-1] == 7


def test_the_charts_have_axes_labels_and_a_legend(db):
    crawl_some(db)
    with db.connect() as conn:
        svg = str(time_chart(dashboard.timeline(conn)))
        bars = str(roots_chart(dashboard.top_roots(conn)))
    assert svg.startswith("<svg") and "hosts per hour" in svg and "hour (UTC)" in svg
    assert "discovered" in svg and "crawled: answered" in svg and "<polyline" in svg
    assert "5 crawled, answered" in svg  # a bar's tooltip
    assert "big.test: 12 hosts" in bars and ">12<" in bars


def test_labels_are_escaped():
    assert "&lt;b&gt;" in str(roots_chart([("<b>.test", 3)]))


def test_the_y_axis_tops_are_round():
    assert [nice_top(n) for n in (0, 1, 3, 7, 11, 180, 4_001)] == [1, 1, 5, 10, 20, 200, 5_000]


def test_the_dashboard_shows_both_charts(client, db):
    crawl_some(db)
    html = client.get("/").get_data(as_text=True)
    assert html.count("<svg") >= 2 and "The roots with the most hosts" in html


def test_axis_labels_shorten_large_numbers():
    from webpanel.charts import short

    assert [short(n) for n in (0, 950, 1_200, 250_000, 1_250_000, 5_000_000, 2e9)] == [
        "0",
        "950",
        "1.2k",
        "250k",
        "1.25M",
        "5M",
        "2B",
    ]
