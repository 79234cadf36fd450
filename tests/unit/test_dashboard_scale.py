"""The dashboard's cost follows neither the hosts nor the hidden rows (bench/growth.py at
10M hosts): 'by source' is read from source_hours, the hidden hosts' share from a sample
of at most HIDDEN_SAMPLE of them; and the same figures come out of a Citus cluster."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from crawler.core.hostnames import root
from crawler.core.links import FoundName
from crawler.db.crawl import queue, retention
from crawler.db.operators import hidden
from crawler.db.rules import deny_entries
from crawler.db.server import estimates
from tests.unit.test_counts import hosts_rows_read
from tests.unit.test_panel_support import insert_hosts
from webpanel.queries import dashboard


def found(engine, names: list[str], source: str | None) -> None:
    with engine.begin() as conn:
        named = [FoundName(n, root(n), "a href", source) for n in names]
        queue.insert_hosts(conn, [("page.test", named)])


def test_found_by_source_reads_the_hourly_rollup_not_the_hosts(db):
    found(db, [f"l{i}.big.test" for i in range(300)], "links")
    found(db, [f"s{i}.cdn.test" for i in range(40)], "scripts")
    queue.save_hosts(db, ["seeded.test"])  # no source: "seed or older"
    with db.connect() as conn:
        before = hosts_rows_read(conn)
        by_source = dashboard.found_by_source(conn, hidden.Hidden(), dashboard.window_start())
        assert hosts_rows_read(conn) == before  # the old range scan read all 341
    assert by_source == [("links", 300), ("scripts", 40), (None, 1)]


def test_source_hours_are_pruned_with_host_hours(db):
    found(db, ["a.old.test"], "links")
    with db.begin() as conn:
        conn.execute(text("UPDATE source_hours SET hour = hour - interval '40 days'"))
    found(db, ["b.new.test"], "links")
    pruned = retention.prune(db, retention.Rules(host_hours=30, source_hours=30))
    assert pruned.source_hours == 1
    with db.connect() as conn:
        assert conn.execute(text("SELECT sum(discovered) FROM source_hours")).scalar() == 1


@pytest.fixture
def trap_of_many(db):
    """500 hosts shown (scripts), a blocked trap of 1,000 (links) with its own row."""
    found(db, [f"v{i}.shown.test" for i in range(500)], "scripts")
    found(db, ["trap.test"] + [f"t{i}.trap.test" for i in range(1000)], "links")
    deny_entries.upsert_blocked(db, "trap.test", "subdomain generator")
    # The statistics and visibility map autovacuum keeps on a live database. Left with
    # an earlier test's (many small roots), the planner probed by an index by root
    # (ix_hosts_root, gone in 0028) and read the trap's 1,001 rows a probe: 41,939 read
    # in one run of the suite.
    with db.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE hosts"))  # the visibility map too: index-only
    return db


def test_many_hidden_rows_are_sampled_and_still_left_out(trap_of_many, monkeypatch):
    monkeypatch.setattr(hidden, "HIDDEN_SAMPLE", 100)
    with trap_of_many.connect() as conn:
        before = hosts_rows_read(conn)
        share = hidden.hidden_figures(conn, dashboard.window_start())
        looked_up = hosts_rows_read(conn) - before
        figures = dashboard.dashboard(conn)
    assert share.sampled and share.entries["blocked"] == 1  # entries: always counted
    assert 50 < looked_up < 250  # about HIDDEN_SAMPLE, not the 1,001 (and the planner's few)
    # The trap's hosts share their facts: the sample scales to about all 1,001 of them.
    assert share.rows == pytest.approx(1001, rel=0.25)
    assert set(share.hosts) == {None} and share.hosts[None] == share.rows
    assert set(share.found) == {"links"}
    assert figures.estimated is True  # the strip says "≈"
    assert figures.hosts_known == pytest.approx(500, abs=250) and figures.blocked == 1
    assert figures.found_by_source == [("scripts", 500)]  # not one of the trap's links
    assert figures.timeline.discovered[-1] == pytest.approx(500, abs=250)
    assert figures.top_roots == [("shown.test", 500)]  # counted per root, not sampled


def test_few_hidden_rows_are_all_looked_up_exactly(trap_of_many):
    with trap_of_many.connect() as conn:
        share = hidden.hidden_figures(conn, datetime.now(UTC).replace(minute=0, second=0))
        figures = dashboard.dashboard(conn)
    assert not share.sampled and share.rows == 1001 and share.hosts == {None: 1001}
    assert figures.estimated is False and figures.hosts_known == 500


# -- the same figures on a Citus cluster ---------------------------------------------------


def a_day_of_discoveries(engine) -> None:
    """Shown hosts of 12 roots by two sources, one crawled; a no_follow root (its entry
    and its subdomains out of routing), written as the entry's sweep writes them (the
    entries' own writer is not cluster-ready: crawler.db.rules.deny_entries)."""
    found(engine, [f"h{i}.site{r}.test" for r in range(12) for i in range(r % 4 + 1)], "links")
    found(engine, [f"s{r}.site{r}.test" for r in range(12)], "scripts")
    found(engine, ["social.test"] + [f"u{i}.social.test" for i in range(6)], "links")
    queue.finish_many(engine, [queue.Crawled("h0.site3.test", queue.CrawlResult("OK", 200))])
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE hosts SET status_reason = 'no_follow'"
                " WHERE hostname = 'social.test' AND root = 'social.test'"
            )
        )
        conn.execute(
            text(
                "UPDATE hosts SET denied_by = 'social.test'"
                " WHERE root = 'social.test' AND hostname <> 'social.test'"
            )
        )


def figures_of(engine) -> dict:
    with engine.connect() as conn:
        figures = dashboard.dashboard(conn).as_dict()
    figures.pop("computed_at")
    return figures


def test_the_dashboard_computes_on_a_cluster_as_on_one_server(cluster_db, db):
    a_day_of_discoveries(cluster_db)
    a_day_of_discoveries(db)
    on_cluster, on_one_server = figures_of(cluster_db), figures_of(db)
    assert on_cluster == on_one_server
    assert on_cluster["hosts_known"] == 30 + 12  # social.test's 7 left out
    assert on_cluster["found_by_source"] == {"links": 30, "scripts": 12}
    assert on_cluster["no_follow"] == 1 and on_cluster["crawled_last_hour"] == 1
    assert on_cluster["top_roots"][0] == {"root": "site7.test", "hosts": 5}
    assert all(r["root"] != "social.test" for r in on_cluster["top_roots"])


@pytest.mark.parametrize("deployment", ["db", "cluster_db"])
def test_a_big_database_is_estimated_on_a_cluster_as_on_one_server(deployment, request):
    """Past EXACT_BELOW the strip is the planner's on both: on a cluster, each shard's
    statistics (the coordinator's own table has none: 0 rows, no pg_stats), not a count."""
    engine = request.getfixturevalue(deployment)
    insert_hosts(engine, [f"h{i}.ok{i % 40}.test" for i in range(2_000)], outcome="OK")
    insert_hosts(engine, [f"h{i}.new{i % 40}.test" for i in range(1_000)])
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        crawled = "UPDATE hosts SET next_claim_at = now() + interval '5 days' WHERE root LIKE 'ok%'"
        conn.execute(text(crawled))
        conn.execute(text("ANALYZE hosts"))
    with engine.connect() as conn:
        assert estimates.hosts_estimate(conn) == pytest.approx(3_000, rel=0.1)
        request.getfixturevalue("monkeypatch").setattr(dashboard, "EXACT_BELOW", 1_000)
        figures = dashboard.totals(conn)
    assert figures["estimated"] is True
    assert figures["hosts_known"] == pytest.approx(3_000, rel=0.1)
    assert figures["due_now"] == pytest.approx(1_000, rel=0.2)
    outcomes = dict(figures["outcomes"])
    assert outcomes["OK"] == pytest.approx(2_000, rel=0.1)
    assert outcomes[None] == pytest.approx(1_000, rel=0.1)
