"""The dashboard's workers block (webpanel/queries/worker_rows.py): how many crawler workers
are alive and each one's pages/s, from their heartbeats in crawl_workers; and the rule
that forgets a killed worker's row."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sqlalchemy import text

from crawler.db.crawl import heartbeats, retention
from crawler.db.crawl.heartbeats import Beat

pytest_plugins = ["tests.unit.test_panel_support"]
STARTED = datetime(2026, 12, 2, 18, 0, tzinfo=UTC)


def beat(db, name: str, pages_per_s: float, pages: int = 100) -> None:
    heartbeats.beat(db, Beat(name, "vm", 4242, STARTED, pages, pages_per_s))


def silence(db, name: str, interval: str) -> None:
    with db.begin() as conn:
        conn.execute(
            text(
                f"UPDATE crawl_workers SET heartbeat_at = now() - interval '{interval}'"
                " WHERE name = :n"
            ),
            {"n": name},
        )


def workers_block(client) -> str:
    page = client.get("/").get_data(as_text=True)
    return re.search(r'<div class="outcomes workers" id="workers">.*?</div>', page, re.S)[0]


def test_the_dashboard_counts_the_workers_alive_and_shows_their_pages_per_second(client, db):
    beat(db, "worker-1@vm", 12.5)
    beat(db, "worker-2@vm", 7.5)
    beat(db, "worker-3@vm", 30.0)
    silence(db, "worker-3@vm", "5 minutes")  # killed: no heartbeat for minutes
    block = workers_block(client)
    assert '<p id="workers-alive">2 alive, 20.0 pages/s</p>' in block  # 12.5 + 7.5
    alive = re.findall(
        r'class="worker alive" data-worker="([^"]+)">.*?<span class="n">([\d.]+) pages/s',
        block,
        re.S,
    )
    assert alive == [("worker-1@vm", "12.5"), ("worker-2@vm", "7.5")]
    assert re.search(r'class="worker gone" data-worker="worker-3@vm">.*?silent since', block, re.S)


def test_a_worker_that_beats_again_takes_its_row_over_and_one_that_leaves_is_gone(client, db):
    beat(db, "worker-1@vm", 3.0)
    silence(db, "worker-1@vm", "5 minutes")
    assert "0 alive, 0.0 pages/s" in workers_block(client)
    beat(db, "worker-1@vm", 4.0)  # restarted under the same name
    assert "1 alive, 4.0 pages/s" in workers_block(client)
    heartbeats.leave(db, "worker-1@vm")
    block = workers_block(client)
    assert "0 alive" in block and "none running" in block


def test_retention_forgets_a_dead_worker_a_day_after_its_last_heartbeat(db):
    for name in ("killed@vm", "lately@vm", "alive@vm"):
        beat(db, name, 1.0)
    silence(db, "killed@vm", "25 hours")
    silence(db, "lately@vm", "23 hours")
    assert retention.prune(db).crawl_workers == 1
    with db.connect() as conn:
        left = set(conn.execute(text("SELECT name FROM crawl_workers")).scalars())
    assert left == {"lately@vm", "alive@vm"}
