"""Polite claims: per-root concurrency and budget across workers, batches spread
over roots, on the database."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from datetime import timedelta

from sqlalchemy import create_engine, text

from crawler.core.hostnames import root
from crawler.core.outcomes import OK
from crawler.db.crawl import claims, queue
from crawler.db.crawl.claims import RootLimits
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import deny_entries


def roots_of(hosts: list[str]) -> Counter:
    return Counter(root(h) for h in hosts)


def finish(db, hosts: list[str]) -> None:
    queue.finish_many(db, [Crawled(h, CrawlResult(OK)) for h in hosts])


def test_one_big_root_does_not_take_the_first_batch(db):
    """10,000 due hosts of one root (older) and 100 of each of 50 others."""
    queue.save_hosts(db, [f"h{i}.big.test" for i in range(10_000)])
    others = [f"h{i}.site{r}.test" for r in range(50) for i in range(100)]
    queue.save_hosts(db, others)
    batch = claims.claim_polite(db, 32, "w1").hosts
    assert len(batch) == 32
    per_root = roots_of(batch)
    assert len(per_root) >= 16
    assert per_root["big.test"] <= 2
    assert max(per_root.values()) <= 2


def test_a_root_at_its_concurrency_is_skipped_until_a_claim_ends(db):
    queue.save_hosts(db, [f"h{i}.one.test" for i in range(10)] + ["a.two.test"])
    limits = RootLimits(concurrency=2)
    first = claims.claim_polite(db, 10, "w1", limits=limits).hosts
    assert roots_of(first) == {"one.test": 2, "two.test": 1}
    assert claims.claim_polite(db, 10, "w2", limits=limits).hosts == []  # across workers
    finish(db, [h for h in first if h.endswith("one.test")][:1])
    again = claims.claim_polite(db, 10, "w2", limits=limits).hosts
    assert roots_of(again) == {"one.test": 1}


def test_roots_with_a_claim_running_still_fill_a_whole_batch(db):
    """200 roots of 3 hosts; one claim running on each of the 100 oldest: another claim of
    100 takes the room they have left (one host each), not half a batch."""
    queue.save_hosts(db, [f"h{i}.site{r}.test" for r in range(200) for i in range(3)])
    running = claims.claim_polite(db, 100, "w1", limits=RootLimits(concurrency=1)).hosts
    assert len(roots_of(running)) == 100
    batch = claims.claim_polite(db, 100, "w2", limits=RootLimits(concurrency=2)).hosts
    assert len(batch) == 100
    together = roots_of(running + batch)
    assert max(together.values()) == 2


def test_roots_at_their_concurrency_past_the_first_page_do_not_starve_a_claim(db):
    """A crawl's running claims leave their roots at the front of the walk (each has a host
    due still): 60 of them, past the 40 a claim of 10 walks first (4 roots per host it
    wants), and 10 roots behind them with a host each. The claim walks on to those."""
    queue.save_hosts(db, [f"h{i}.busy{r}.test" for r in range(60) for i in range(3)])
    running = claims.claim_polite(db, 120, "w1").hosts
    assert roots_of(running) == {f"busy{r}.test": 2 for r in range(60)}
    queue.save_hosts(db, [f"calm{r}.test" for r in range(10)])
    batch = claims.claim_polite(db, 10, "w2").hosts
    assert sorted(batch) == sorted(f"calm{r}.test" for r in range(10))


def test_an_expired_lease_no_longer_counts(db):
    """A killed worker's claims count only until their lease ends."""
    queue.save_hosts(db, [f"h{i}.crash.test" for i in range(4)])
    lost = claims.claim_polite(db, 10, "dead", lease=timedelta(minutes=10)).hosts
    assert len(lost) == 2
    assert claims.claim_polite(db, 10, "w2").hosts == []
    with db.begin() as conn:  # the dead worker's leases run out
        conn.execute(
            text(
                "UPDATE hosts SET next_claim_at = now() - interval '1 second'"
                " WHERE claimed_by = 'dead'"
            )
        )
    assert len(claims.claim_polite(db, 10, "w2").hosts) == 2


def test_over_budget_a_root_waits_and_nothing_is_lost(db):
    farm = [f"h{i}.farm.test" for i in range(30)]
    queue.save_hosts(db, farm + [f"h{i}.calm.test" for i in range(3)])
    limits = RootLimits(concurrency=100, budget=10)
    first = claims.claim_polite(db, 100, "w1", limits=limits)
    assert roots_of(first.hosts) == {"farm.test": 10, "calm.test": 3}
    assert first.over_budget == ["farm.test"]
    finish(db, first.hosts)
    queue.save_hosts(db, ["new.farm.test"])  # a fresh link does not lift the hold
    assert claims.claim_polite(db, 100, "w1", limits=limits).hosts == []
    assert not claims.crawl_pending(db)  # held: nothing claimable for the drain check
    with db.connect() as conn:
        waiting = conn.execute(
            text("SELECT count(*) FROM queue WHERE root = 'farm.test' AND next_claim_at <= now()")
        ).scalar_one()
        held = conn.execute(text("SELECT held_until - now() FROM roots WHERE root = 'farm.test'"))
        assert timedelta(minutes=59) < held.scalar_one() <= timedelta(minutes=61)
    assert waiting == 21  # still due, nothing lost
    with db.begin() as conn:  # an hour later
        conn.execute(text("UPDATE root_claims SET minute = minute - interval '2 hours'"))
        conn.execute(text("UPDATE roots SET held_until = now() - interval '1 second'"))
    assert len(claims.claim_polite(db, 100, "w1", limits=limits).hosts) == 10


def test_polite_claims_keep_deny_entries(db):
    queue.save_hosts(db, ["a.ok.test", "x.denied.test"])
    deny_entries.add_no_follow(db, ["denied.test"])
    queue.save_hosts(db, ["y.denied.test"])  # a stale worker saved it under the entry
    assert claims.claim_polite(db, 10, "w").hosts == ["a.ok.test"]


def test_hosts_saved_under_an_entry_never_starve_the_claims(db):
    """Workers with a stale deny list save links under a new entry (the entry's routing
    update never saw them). Their roots stay due with nothing claimable: the claim must
    take them out of routing under their entry, not lock those roots first forever."""
    stale = [f"x.stale{r}.test" for r in range(8)]
    queue.save_hosts(db, stale)
    deny_entries.add_no_follow(db, [f"stale{r}.test" for r in range(8)])
    queue.save_hosts(db, [f"y.stale{r}.test" for r in range(8)])  # after the entry
    queue.save_hosts(db, ["a.fresh.test", "b.fresh.test"])
    with db.begin() as conn:  # the stale names are the oldest due rows
        conn.execute(
            text(
                "UPDATE hosts SET next_claim_at = now() - interval '1 day'"
                " WHERE hostname LIKE 'y.stale%'"
            )
        )
    taken = []
    for _ in range(5):  # a claim of 4 looks into 2 roots (3 hosts each, 2 at once): 9 roots
        taken += claims.claim_polite(db, 4, "w").hosts
    assert sorted(taken) == ["a.fresh.test", "b.fresh.test"]
    with db.connect() as conn:
        routed = conn.execute(
            text("SELECT hostname, denied_by FROM queue WHERE hostname LIKE 'y.stale%'")
        ).all()
    assert sorted(routed) == [(f"y.stale{r}.test", f"stale{r}.test") for r in range(8)]
    deny_entries.remove_no_follow(db, ["stale0.test"])  # put back: theirs again, and due
    assert "y.stale0.test" in claims.claim_polite(db, 10, "w").hosts


def test_roots_know_their_hosts_and_outcomes(db):
    queue.save_hosts(db, ["a.count.test", "b.count.test", "c.count.test"])
    queue.finish_many(
        db,
        [
            Crawled("a.count.test", CrawlResult(OK)),
            Crawled("b.count.test", CrawlResult("DNS_NXDOMAIN")),
        ],
    )
    with db.connect() as conn:
        row = conn.execute(
            text("SELECT hosts, crawled_ok, failed FROM roots WHERE root = 'count.test'")
        ).one()
    assert tuple(row) == (3, 1, 1)


def polite_drain(url: str, worker: str, start) -> tuple[list[str], int]:
    """Claim and finish until nothing is due; the most hosts of one root held at once."""
    engine = create_engine(url)
    start.wait(timeout=60)
    claimed: list[str] = []
    idle = 0
    while idle < 20:
        batch = claims.claim_polite(engine, 16, worker).hosts
        if not batch:
            idle += 1
            continue
        idle = 0
        claimed += batch
        with engine.connect() as conn:
            most = conn.execute(
                text(
                    "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM queue"
                    " WHERE claimed_by IS NOT NULL AND next_claim_at > now() GROUP BY root) c"
                )
            ).scalar_one()
        assert most <= 2, most
        queue.finish_many(
            engine, [Crawled(h, CrawlResult(OK), recrawl_after=timedelta(days=1)) for h in batch]
        )
    engine.dispose()
    return claimed


def test_two_processes_never_hold_more_than_the_concurrency_of_a_root(db, database_url):
    names = [f"h{i}.r{i % 7}.test" for i in range(400)]
    queue.save_hosts(db, names)
    context = multiprocessing.get_context("spawn")
    start = context.Manager().Event()
    with context.Pool(2) as pool:
        jobs = [pool.apply_async(polite_drain, (database_url, f"w{i}", start)) for i in range(2)]
        start.set()
        results = [job.get(timeout=300) for job in jobs]
    counts = Counter(name for claimed in results for name in claimed)
    assert set(counts) == set(names)
    assert max(counts.values()) == 1


def test_a_row_dated_by_hand_is_claimed_though_its_root_was_not_told(db):
    """A hand-made UPDATE of a date (no writer of ours) leaves the root's bound too late:
    a claim that finds no root looks at the oldest due rows and lowers their roots."""
    queue.save_hosts(db, ["a.late.test", "b.late.test"])
    finish(db, claims.claim_polite(db, 10, "w").hosts)  # both crawled: due in a week
    with db.begin() as conn:
        conn.execute(text("UPDATE hosts SET next_claim_at = now() WHERE hostname = 'a.late.test'"))
    assert claims.claim_polite(db, 10, "w").hosts == ["a.late.test"]
