"""crawler.db.crawl.rollups on real Postgres: what the writers keep beside their rows (roots'
counters and dates, the hourly figures) is what a recount of the rows gives, and a
finish writes each rollup table once."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

from sqlalchemy import event, text

from crawler.core.links import FilteredLinks
from crawler.core.outcomes import ALIVE, counts_as_failed
from crawler.db.crawl import claims, queue
from crawler.db.crawl.queue import Crawled, CrawlResult


def roots_table(db) -> dict[str, tuple]:
    with db.connect() as conn:
        rows = conn.execute(text("SELECT root, hosts, crawled_ok, failed FROM roots"))
        return {root: (hosts, ok, failed) for root, hosts, ok, failed in rows if hosts}


def recounted(db) -> dict[str, tuple]:
    """The roots' counters as a count of the hosts rows gives them."""
    hosts, ok, failed = Counter(), Counter(), Counter()
    with db.connect() as conn:
        for root, outcome in conn.execute(text("SELECT root, outcome FROM hosts")):
            hosts[root] += 1
            ok[root] += outcome in ALIVE
            failed[root] += counts_as_failed(outcome)
    return {root: (hosts[root], ok[root], failed[root]) for root in hosts}


def due_bounds(db) -> list[tuple]:
    """(root, its bound, its earliest routable date) where the bound is later than it:
    the claim walks roots by the bound, so a root whose bound is late is claimed late."""
    with db.connect() as conn:
        return conn.execute(
            text(
                "SELECT r.root, r.next_due_at, min(q.next_claim_at) FROM roots r"
                " JOIN queue q ON q.root = r.root"
                " WHERE q.status_reason IS NULL AND q.denied_by IS NULL"
                " GROUP BY r.root, r.next_due_at"
                " HAVING r.next_due_at IS NULL OR r.next_due_at > min(q.next_claim_at)"
            )
        ).all()


def crawled(hostname: str, outcome: str, links: set[str]) -> Crawled:
    result = CrawlResult(outcome, 200 if outcome == "OK" else None)
    return Crawled(hostname, result, FilteredLinks.of(links), timedelta(days=1))


def test_a_finish_keeps_the_roots_as_a_recount_would(db):
    queue.save_hosts(db, ["a.test", "www.a.test", "b.test", "www.b.test", "c.test"])
    taken = claims.claim(db, 10, "w")
    assert len(taken) == 5
    outcomes = {"a.test": "OK", "www.a.test": "DNS_NXDOMAIN", "b.test": "IGNORED"}
    queue.finish_many(
        db,
        [
            crawled(h, outcomes.get(h, "TCP_TIMEOUT"), {"new.a.test", "d.test", "www.d.test"})
            for h in taken
        ],
    )
    # Crawled again, some outcomes changed: the counters move by the difference.
    again = claims.claim(db, 10, "w")  # the new ones (due now)
    queue.release(db, again)
    with db.begin() as conn:
        conn.execute(text("UPDATE hosts SET next_claim_at = now() WHERE hostname LIKE '%a.test'"))
    later = [h for h in claims.claim(db, 10, "w") if h.endswith("a.test")]
    assert sorted(later) == ["a.test", "new.a.test", "www.a.test"]
    queue.finish_many(db, [crawled(h, "OK", {"e.test"}) for h in later])
    assert roots_table(db) == recounted(db)
    assert roots_table(db)["a.test"] == (3, 3, 0)  # www.a.test answered this time
    assert due_bounds(db) == []


def test_a_finish_writes_roots_and_the_hour_once(db):
    """The finish's rollups are gathered over its statements and written before it
    commits: one statement per rollup table (they were six of its ten statements)."""
    queue.save_hosts(db, ["a.test", "www.a.test", "b.test"])
    taken = claims.claim(db, 10, "w")
    sent: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        sent.append(" ".join(statement.split()))

    event.listen(db, "before_cursor_execute", seen)
    try:
        page = {"new.a.test", "c.test", "www.c.test", "b.test"}
        queue.finish_many(db, [crawled(h, "OK", page) for h in taken])
    finally:
        event.remove(db, "before_cursor_execute", seen)
    writes = Counter(
        m.group(0) for s in sent if (m := re.match(r"(INSERT INTO|UPDATE) (roots|host_hours)", s))
    )
    assert writes["INSERT INTO roots"] == 1
    assert writes["INSERT INTO host_hours"] == 1
    assert writes["UPDATE roots"] <= 1  # the dates of roots whose counters did not move
    assert roots_table(db) == recounted(db)
    with db.connect() as conn:
        hour = conn.execute(text("SELECT sum(discovered), sum(ok) FROM host_hours")).one()
    assert tuple(hour) == (6, 3)  # 3 saved, then 3 found (b.test was known); 3 answered
    assert due_bounds(db) == []
