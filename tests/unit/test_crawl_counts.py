"""One count per concept (crawler.db.crawl.counts), on real Postgres: two workers that both
find the world silent and both try the same three hosts during a DNS outage. The banner,
the health row, /metrics and the console's progress line all say 3 held back (distinct
hosts, not 3 per worker), the same due now and in flight; the held tries show as DNS
failures of their minute; they are not charged to their roots' hourly budget; and a new
demo in the same database starts every figure from zero. The database's own rules on one
server and on a Citus cluster (`either`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from crawler.db.crawl import claims, counts, heartbeats, queue
from crawler.db.rules import deny_entries, world_silences
from tests.fakeweb.demo import forget_previous_demo
from tests.unit.test_metrics import samples
from tests.unit.test_panel_support import give_api_token, insert_hosts
from webpanel.queries import dashboard
from webpanel.queries import health as health_page

pytest_plugins = ["tests.unit.test_panel_support"]

HELD = ["a.r1.test", "b.r2.test", "c.r3.test"]
FETCHING = ["d.r4.test", "e.r5.test"]
SOON = timedelta(seconds=15)


def claimed_this_hour(db, hostnames) -> int:
    roots = [name.split(".", 1)[1] for name in hostnames]
    with db.connect() as conn:
        return conn.execute(
            text("SELECT coalesce(sum(claimed), 0) FROM root_claims WHERE root = ANY(:r)"),
            {"r": roots},
        ).scalar_one()


def an_outage_seen_by_two_workers(db) -> None:
    """w1 claims all five hosts; the three HELD fail at DNS while the world is silent and
    are tried again (due at once), then claimed by w2 and held back again."""
    insert_hosts(db, HELD + FETCHING)
    since = datetime.now(UTC)
    for worker in ("w1", "w2"):
        world_silences.report(db, worker, since, False, held_back=len(HELD))
    assert sorted(claims.claim_polite(db, 10, "w1").hosts) == sorted(HELD + FETCHING)
    assert claimed_this_hour(db, HELD) == 3
    queue.retry_soon(db, HELD, timedelta(0), "DNS_TIMEOUT")
    assert sorted(claims.claim_polite(db, 10, "w2").hosts) == sorted(HELD)
    queue.retry_soon(db, HELD, SOON, "DNS_TIMEOUT")


def test_every_view_counts_the_hosts_held_back_once(db, client):
    an_outage_seen_by_two_workers(db)
    with db.connect() as conn:
        crawl = counts.now(conn)
        banner = world_silences.current(conn)
        row = health_page.health(conn)
        progress = heartbeats.progress(conn)
    assert (crawl.held_back, crawl.in_flight, crawl.due_now) == (3, 2, 0)
    assert banner.held_back == row.held_back == progress.held_back == 3
    assert row.in_flight == progress.in_flight == 2 and row.due_now == progress.due == 0
    assert "0 due now, 2 in flight, 3 hosts held back by an outage" in progress.describe()
    metrics = client.get("/metrics", headers=give_api_token(db, "alice", "t0k3n"))
    found = samples(metrics.get_data(as_text=True))
    assert found[("hostcrawl_hosts_held_back", ())] == 3
    assert found[("hostcrawl_hosts_in_flight", ())] == 2
    assert found[("hostcrawl_queue_due", ())] == 0
    assert found[("hostcrawl_failed_recently", (("layer", "DNS"),))] == 6
    page = client.get("/").get_data(as_text=True)
    assert 'id="health-held">3<' in page and 'id="stat-due">0<' in page


def test_tries_held_back_are_dns_failures_of_their_minute(either):
    db = either  # one server, then a Citus cluster
    an_outage_seen_by_two_workers(db)
    with db.connect() as conn:
        row = health_page.health(conn)
        failed = counts.failed_lately(conn)
    assert failed.by_layer["DNS"] == 6 and failed.held == 6 and failed.settled == 0
    assert row.failure_share == 1.0 and row.tried_lately == 6
    assert sum(row.failures["DNS"][-2:]) > 0 and sum(row.pages) == 0


def test_tries_held_back_are_not_charged_to_the_roots_budget(either):
    db = either  # one server, then a Citus cluster
    an_outage_seen_by_two_workers(db)
    assert claimed_this_hour(db, HELD) == 0  # claimed twice each, both given back
    assert claimed_this_hour(db, FETCHING) == 2


def test_a_host_settled_after_the_outage_is_no_longer_held(either):
    db = either  # one server, then a Citus cluster
    an_outage_seen_by_two_workers(db)
    queue.finish_many(db, [queue.Crawled(HELD[0], queue.CrawlResult("OK"))])
    with db.connect() as conn:
        assert counts.held_back(conn) == 2
    for worker in ("w1", "w2"):
        world_silences.clear(db, worker)
    with db.connect() as conn:
        assert counts.held_back(conn) == 0 and world_silences.current(conn) is None


def test_a_new_demo_starts_its_figures_from_zero(db, operators):
    an_outage_seen_by_two_workers(db)
    queue.finish_many(db, [queue.Crawled(FETCHING[0], queue.CrawlResult("DNS_NXDOMAIN"))])
    assert forget_previous_demo(db) == len(HELD + FETCHING)
    with db.connect() as conn:
        row = health_page.health(conn)
        crawl = counts.now(conn)
        kept = conn.execute(text("SELECT count(*) FROM users")).scalar_one()
        left = {
            table: conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
            for table in ("host_minutes", "host_hours", "source_hours", "roots", "root_claims")
        }
    assert (crawl.held_back, crawl.in_flight, crawl.due_now, crawl.failed.tried) == (0, 0, 0, 0)
    assert row.failure_share is None and sum(row.pages) == sum(row.failures["DNS"]) == 0
    assert set(left.values()) == {0}, left
    assert kept == len(operators)  # the demo's operators stay


def test_the_console_and_the_strip_know_the_same_hosts(db, client):
    """Hosts known: the hosts the list shows, not the entries' own rows nor those under
    them, in the strip, /metrics and the console alike."""
    insert_hosts(db, ["a.test", "b.test", "www.c.test", "ok.test"])
    deny_entries.add_no_follow(db, ["c.test", "nf.test"])
    with db.connect() as conn:
        progress = heartbeats.progress(conn)
        strip = dashboard.totals(conn)
        known = counts.hosts_known(conn)
    metrics = client.get("/metrics", headers=give_api_token(db, "alice", "t0k3n"))
    found = samples(metrics.get_data(as_text=True))
    assert known == (3, False)
    assert progress.hosts == strip["hosts_known"] == found[("hostcrawl_hosts_known", ())] == 3
