"""The dashboard's charts: hosts discovered and crawled per hour by outcome,
and the biggest roots, drawn as SVG with axes, labels and a legend."""

from __future__ import annotations

from crawler.db.crawl import queue
from crawler.db.crawl.queue import Crawled, CrawlResult
from webpanel.charts import nice_ticks, roots_chart, tick_label, time_chart
from webpanel.queries import dashboard

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
    assert [nice_ticks(n)[-1] for n in (0, 1, 3, 7, 11, 180, 4_001)] == [1, 1, 3, 8, 15, 200, 5_000]


def test_count_ticks_are_whole_numbers_in_steps_of_1_2_or_5():
    """A peak of 5 read 0, 1, 2, 4, 5 (gridlines at quarters of 5, rounded): now each
    tick is a whole step of 1, 2 or 5 times a power of ten."""
    assert nice_ticks(5) == [0, 1, 2, 3, 4, 5]
    assert nice_ticks(7) == [0, 2, 4, 6, 8]
    assert nice_ticks(11) == [0, 5, 10, 15]
    assert nice_ticks(2_500_000) == [0, 500_000, 1_000_000, 1_500_000, 2_000_000, 2_500_000]
    for peak in (1, 2, 3, 5, 6, 9, 13, 99, 101, 777, 12_345):
        ticks = nice_ticks(peak)
        step = ticks[1] - ticks[0]
        assert all(t == int(t) for t in ticks) and ticks[-1] >= peak > ticks[-2], ticks
        assert all(b - a == step for a, b in zip(ticks, ticks[1:], strict=False)), ticks
        assert len(ticks) <= 6 and step / 10 ** (len(str(int(step))) - 1) in (1, 2, 5)


def test_rate_ticks_step_below_one_and_say_so():
    ticks = nice_ticks(0.37, most=4, whole=False)
    assert ticks == [0, 0.1, 0.2, 0.3, 0.4]
    assert [tick_label(t, 0.1) for t in ticks] == ["0", "0.1", "0.2", "0.3", "0.4"]
    assert nice_ticks(3.2, most=4, whole=False) == [0, 1, 2, 3, 4]


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
