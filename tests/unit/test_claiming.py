"""Claiming (DESIGN.md §6): SKIP LOCKED across OS processes, leases, what is never routed."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from datetime import timedelta

from sqlalchemy import create_engine, text

from crawler.db.database import Database

ROWS = 20_000
WORKERS = 4


def drain(url: str, worker: str, start) -> list[str]:
    """Claim batches until nothing is due (runs in a child process)."""
    engine = create_engine(url)
    db = Database(engine)
    start.wait(timeout=60)
    claimed: list[str] = []
    while batch := db.start_urls(100, worker):
        claimed += batch
    engine.dispose()
    return claimed


def test_four_processes_claim_every_row_exactly_once(db, database_url):
    names = [f"h{i}.r{i % 97}.test" for i in range(ROWS)]
    db.save_hosts(names)
    db.save_hosts(["x.blocked.test", "y.nofollow.test", "dateless.test"])
    db.upsert_blocked("blocked.test", "trap")
    db.add_no_follow(["nofollow.test"])
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE queue SET next_claim_at = NULL WHERE hostname = 'dateless.test'"))

    context = multiprocessing.get_context("spawn")
    start = context.Manager().Event()
    with context.Pool(WORKERS) as pool:
        jobs = [pool.apply_async(drain, (database_url, f"w{i}", start)) for i in range(WORKERS)]
        start.set()
        results = [job.get(timeout=300) for job in jobs]

    counts = Counter(name for claimed in results for name in claimed)
    assert set(counts) == set(names)
    assert max(counts.values()) == 1
    assert all(results), "every worker got a share"


def test_expired_lease_makes_a_row_claimable_again(db):
    db.save_hosts(["lease.test"])
    assert db.start_urls(10, "w1", lease=timedelta(minutes=10)) == ["lease.test"]
    assert db.start_urls(10, "w2") == []
    with db.engine.begin() as conn:  # let the lease run out
        conn.execute(text("UPDATE queue SET next_claim_at = now() - interval '1 second'"))
    assert db.start_urls(10, "w2") == ["lease.test"]
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT claimed_by FROM queue")).scalar() == "w2"


def test_never_routed(db):
    db.save_hosts(["ok.test", "a.blocked.test", "b.c.nofollow.test", "dateless.test"])
    db.upsert_blocked("blocked.test", "trap")
    db.add_no_follow(["nofollow.test"])
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE queue SET next_claim_at = NULL WHERE hostname = 'dateless.test'"))
        conn.execute(
            text(
                "UPDATE queue SET next_claim_at = now() WHERE next_claim_at IS NULL"
                " AND hostname <> 'dateless.test'"
            )
        )
    assert db.start_urls(100, "w1") == ["ok.test"]


def test_claim_order_is_oldest_first(db, engine):
    db.save_hosts(["new.test", "old.test"])
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE queue SET next_claim_at = now() - interval '1 day'"
                " WHERE hostname = 'old.test'"
            )
        )
    assert db.start_urls(1, "w1") == ["old.test"]
