"""The dashboard's health row on real Postgres: the crawl's finish counts each minute's
pages, new hostnames and failures by layer (host_minutes), the claims say what is in
flight (tests/unit/test_crawl_counts.py: and held back), old minutes are pruned, and the
row is a fragment of its own behind the login."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from crawler.core.links import FilteredLinks
from crawler.core.outcomes import ALL, LAYERS, layer_of
from crawler.db.crawl import claims, heartbeats, queue, retention
from crawler.db.crawl.heartbeats import Beat
from crawler.db.crawl.queue import Crawled, CrawlResult
from tests.unit.test_panel_support import insert_hosts
from webpanel.queries import health as health_page

pytest_plugins = ["tests.unit.test_panel_support"]

OUTCOMES = {
    "ok.test": "OK",
    "alive.test": "DNS_ALIVE",
    "gone.test": "DNS_NXDOMAIN",
    "slow-dns.test": "DNS_TIMEOUT",
    "closed.test": "TCP_REFUSED",
    "bad-cert.test": "TLS_HANDSHAKE",
    "broken.test": "HTTP_ERROR",
    "inside.test": "ADDRESS_REFUSED",
}


def test_every_failed_outcome_has_a_layer_and_answers_have_none():
    assert {layer_of(o) for o in ALL} == {*LAYERS, None}
    assert layer_of("OK") is layer_of("DNS_ALIVE") is layer_of("IGNORED") is None
    assert layer_of("HTTP_UNFINISHED") == "HTTP" and layer_of("ADDRESS_REFUSED") == "ADDRESS"


def crawl_once(db) -> None:
    """Each of OUTCOMES crawled once; ok.test's page names two new hostnames."""
    insert_hosts(db, OUTCOMES)
    new = FilteredLinks.of(["new1.test", "new2.test"])
    queue.finish_many(
        db,
        [
            Crawled(name, CrawlResult(outcome), new if name == "ok.test" else FilteredLinks())
            for name, outcome in OUTCOMES.items()
        ],
    )


def test_the_finish_counts_the_minute_by_layer(db):
    crawl_once(db)
    with db.connect() as conn:
        row = conn.execute(
            text(
                "SELECT sum(crawled) AS crawled, sum(discovered) AS discovered, sum(dns) AS dns,"
                " sum(tcp) AS tcp, sum(tls) AS tls, sum(http) AS http, sum(address) AS address,"
                " max(last_ok_at) AS last_ok FROM host_minutes"
            )
        ).one()
    # insert_hosts saved the eight (discovered too), the finish two more
    assert (row.crawled, row.discovered) == (8, 10)
    assert (row.dns, row.tcp, row.tls, row.http, row.address) == (2, 1, 1, 1, 1)
    assert row.last_ok is not None


def test_the_health_figures_of_the_last_hour(db):
    began = datetime.now(UTC).replace(second=0, microsecond=0)
    crawl_once(db)
    heartbeats.beat(db, Beat("w1", "vm", 1, datetime.now(UTC), 8, 0.5, in_flight=7, held_back=2))
    heartbeats.beat(db, Beat("w2", "vm", 2, datetime.now(UTC), 0, 0.0, in_flight=3))
    assert len(claims.claim(db, 1, "w1")) == 1  # one of the two new hostnames
    with db.connect() as conn:
        figures = health_page.health(conn)
    assert len(figures.minutes) == health_page.MINUTES
    assert figures.minutes[-1] == figures.taken_at.replace(second=0, microsecond=0)
    # The crawl's minute, or the two it straddled when the clock turned meanwhile.
    recent = 1 if figures.minutes[-1] == began else 2
    assert sum(figures.pages[:-recent]) == 0 and sum(figures.pages[-recent:]) > 0
    assert set(figures.failures) == set(LAYERS) and sum(figures.failures["DNS"][-recent:]) > 0
    assert figures.failure_share == 6 / 8 and figures.tried_lately == 8
    # In flight and held back are the database's (claims, held hosts), not the workers'
    # own sums: no world silence, nothing held back.
    assert (figures.workers, figures.in_flight, figures.held_back) == (2, 1, 0)
    assert figures.due_now == 1  # the other new hostname; the crawled ones are due in a week
    assert figures.last_answer_at is not None
    assert sum(figures.as_dict()["failures_per_s"]["TCP"][-recent:]) > 0


def test_an_idle_database_shows_an_empty_hour(db):
    with db.connect() as conn:
        figures = health_page.health(conn)
    assert sum(figures.pages) == 0 and figures.failure_share is None
    assert figures.last_answer_at is None and figures.workers == 0


def test_minutes_older_than_the_rule_are_pruned(db):
    with db.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO host_minutes (minute, shard, crawled) VALUES"
                " (date_trunc('minute', now()) - make_interval(hours => :old), 0, 5),"
                " (date_trunc('minute', now()) - interval '1 hour', 0, 7)"
            ),
            {"old": retention.MINUTES_KEPT + 1},
        )
    pruned = retention.prune(db)
    assert pruned.host_minutes == 1
    with db.connect() as conn:
        assert conn.execute(text("SELECT crawled FROM host_minutes")).scalars().all() == [7]


def test_the_row_is_a_fragment_behind_the_login(client, anonymous, db):
    crawl_once(db)
    fragment = client.get("/health-row")
    html = fragment.get_data(as_text=True)
    assert fragment.status_code == 200
    assert '<section class="health" id="health"' in html and "<html" not in html
    assert 'data-src="/health-row"' in html and 'data-every="10"' in html
    assert '<svg viewBox="0 0 360' in html and "failed at DNS" in html
    assert 'id="health-failures">75%' in html
    dashboard = client.get("/").get_data(as_text=True)
    assert 'id="health"' in dashboard and "/static/health.js" in dashboard
    assert anonymous.get("/health-row").status_code == 302
