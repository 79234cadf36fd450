"""The claim contract of docs/design.md: SKIP LOCKED across OS processes, leases, what
is never routed."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from datetime import timedelta

from sqlalchemy import create_engine, text

from crawler.db.crawl import claims, queue
from crawler.db.rules import deny_entries

ROWS = 20_000
WORKERS = 4


def drain(url: str, worker: str, start) -> list[str]:
    """Claim batches until nothing is due (runs in a child process)."""
    engine = create_engine(url)
    db = engine
    start.wait(timeout=60)
    claimed: list[str] = []
    while batch := claims.claim(db, 100, worker):
        claimed += batch
    engine.dispose()
    return claimed


def test_four_processes_claim_every_row_exactly_once(db, database_url):
    names = [f"h{i}.r{i % 97}.test" for i in range(ROWS)]
    queue.save_hosts(db, names)
    queue.save_hosts(db, ["x.blocked.test", "y.nofollow.test", "dateless.test"])
    deny_entries.upsert_blocked(db, "blocked.test", "trap")
    deny_entries.add_no_follow(db, ["nofollow.test"])
    with db.begin() as conn:
        conn.execute(text("UPDATE hosts SET next_claim_at = NULL WHERE hostname = 'dateless.test'"))

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
    queue.save_hosts(db, ["lease.test"])
    assert claims.claim(db, 10, "w1", lease=timedelta(minutes=10)) == ["lease.test"]
    assert claims.claim(db, 10, "w2") == []
    with db.begin() as conn:  # let the lease run out
        conn.execute(text("UPDATE hosts SET next_claim_at = now() - interval '1 second'"))
    assert claims.claim(db, 10, "w2") == ["lease.test"]
    with db.connect() as conn:
        assert conn.execute(text("SELECT claimed_by FROM queue")).scalar() == "w2"


def test_never_routed(db):
    queue.save_hosts(db, ["ok.test", "a.blocked.test", "b.c.nofollow.test", "dateless.test"])
    deny_entries.upsert_blocked(db, "blocked.test", "trap")
    deny_entries.add_no_follow(db, ["nofollow.test"])
    with db.begin() as conn:
        conn.execute(text("UPDATE hosts SET next_claim_at = NULL WHERE hostname = 'dateless.test'"))
        conn.execute(
            text(
                "UPDATE hosts SET next_claim_at = now() WHERE next_claim_at IS NULL"
                " AND hostname <> 'dateless.test'"
            )
        )
    assert claims.claim(db, 100, "w1") == ["ok.test"]


def test_claim_order_is_oldest_first(db, engine):
    queue.save_hosts(db, ["new.test", "old.test"])
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE hosts SET next_claim_at = now() - interval '1 day'"
                " WHERE hostname = 'old.test'"
            )
        )
    assert claims.claim(db, 1, "w1") == ["old.test"]
