"""A live wildcard farm beside ordinary sites, crawled by two real workers.

`*.farm.test` all resolve and every farm page links 30 fresh random subdomains.
Per-root limits keep it from taking over: while the ordinary sites are crawled
beside it, the farm gets a small share of the fetches, fakeweb never sees more
than ROOT_CONCURRENCY requests for one root at once, ROOT_BUDGET caps the farm
per rolling hour, and the crawl flags the farm as a wildcard zone. (How fast is
bench/crawl.py's question, not a test's.)
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from tests.conftest import empty_tables
from tests.e2e.conftest import FARM_CANARIES, wait_until
from tests.fakeweb.world import World

ORDINARY = [f"site{i}.test" for i in range(10)]
FARM = "farm.test"
HOSTS_PER_ROOT = 30
DELAY = 0.05  # seconds per answer: requests overlap, so concurrency can be seen
CONCURRENCY = 2
BUDGET = 40
RUN_TIMEOUT = 60


def farm_world() -> World:
    """10 ordinary roots of 30 hosts (the root page links every subdomain) and the farm."""
    world = World(seed=12, delay=DELAY)
    for domain in ORDINARY:
        subs = [f"h{j}.{domain}" for j in range(1, HOSTS_PER_ROOT)]
        world.site(domain, links=[f"http://{s}/" for s in subs])
        for j, sub in enumerate(subs):
            world.site(sub, links=[f"http://{subs[(j + 1) % len(subs)]}/"])
    world.farm(FARM, links=30)
    return world


def ordinary_crawled(db) -> int:
    with db.connect() as conn:
        return conn.execute(
            text(
                "SELECT count(*) FROM hosts"
                " WHERE root = ANY(:roots) AND last_crawled_at IS NOT NULL"
            ),
            {"roots": ORDINARY},
        ).scalar_one()


def is_farm(host: str) -> bool:
    return host == FARM or host.endswith("." + FARM)


def fetches_beside_the_farm(web, since: int) -> tuple[int, int]:
    """Front pages fakeweb was asked for after its first `since` requests, up to the last
    ordinary one: (ordinary, farm). Counted in the order fakeweb saw them, not timed."""
    pages = front_pages(web, since)
    last = max(i for i, r in enumerate(pages) if not is_farm(r["host"]))
    farm = sum(is_farm(r["host"]) for r in pages[: last + 1])
    return last + 1 - farm, farm


def claimed_per_root(db) -> dict[str, int]:
    with db.connect() as conn:
        rows = conn.execute(text("SELECT root, sum(claimed) FROM root_claims GROUP BY root"))
        return {r: int(n) for r, n in rows}


def run(db, web, start_crawler, seeds: list[str], until=None, **settings) -> list:
    """Empty the database, seed, crawl with two workers until every ordinary host is crawled."""
    empty_tables(db)
    queue.save_hosts(db, seeds)
    workers = [
        start_crawler(web, ROOT_CONCURRENCY=CONCURRENCY, CLAIM_POLL_INTERVAL=0.1, **settings)
        for _ in range(2)
    ]
    total = len(ORDINARY) * HOSTS_PER_ROOT
    wait_until(lambda: ordinary_crawled(db) == total, RUN_TIMEOUT, "every ordinary host")
    if until is not None:
        wait_until(lambda: until(), RUN_TIMEOUT, "the run's condition")
    return workers


def most_in_flight_per_root(web) -> dict[str, int]:
    most: dict[str, int] = defaultdict(int)
    for request in web.requests():
        root = ".".join(request["host"].split(".")[-2:])
        most[root] = max(most[root], request["root_in_flight"])
    return most


def front_pages(web, since: int) -> list[dict]:
    """Front pages fakeweb was asked for after its first `since` requests, in order."""
    return [r for r in web.requests()[since:] if r["path"] == "/" and r["method"] == "GET"]


def farm_fetches(web, since: int) -> int:
    return sum(is_farm(r["host"]) for r in front_pages(web, since))


@pytest.mark.refetches(FARM_CANARIES)
def test_a_live_wildcard_farm_neither_hammered_nor_taking_over(db, fakeweb_factory, start_crawler):
    web = fakeweb_factory(farm_world())

    for worker in run(db, web, start_crawler, ORDINARY):
        worker.stop()
    before_farm_run = len(web.requests())

    workers = run(
        db,
        web,
        start_crawler,
        [*ORDINARY, FARM],
        until=lambda: wildcard_outcome(db) is not None,
    )
    for worker in workers:
        worker.stop()
    farm_hosts = claimed_per_root(db).get(FARM, 0)
    ordinary, farm = fetches_beside_the_farm(web, before_farm_run)
    print(f"until the last ordinary page: {ordinary} ordinary pages, {farm} farm pages")
    print(f"farm hosts claimed in the run: {farm_hosts}")
    assert farm_hosts >= 20, "the farm was live and crawled"
    # 10 ordinary roots of 2 places each beside the farm's 2: a farm taking over would
    # outnumber them; one held to its root's places stays well under half.
    assert farm <= ordinary / 2
    assert wildcard_outcome(db) == "DNS_ALIVE"  # flagged by the crawl, not blocked
    with db.connect() as conn:
        assert (
            conn.execute(
                text("SELECT count(*) FROM queue WHERE status_reason IS NOT NULL")
            ).scalar()
            == 0
        )

    before_budget_run = len(web.requests())
    workers = run(
        db,
        web,
        start_crawler,
        [*ORDINARY, FARM],
        until=lambda: claimed_per_root(db).get(FARM, 0) >= BUDGET,
        ROOT_BUDGET=BUDGET,
    )
    wait_until(lambda: not any(w.proc.poll() is None for w in workers), RUN_TIMEOUT, "a drain")
    for worker in workers:
        worker.stop()
    claimed = claimed_per_root(db)
    assert claimed[FARM] == BUDGET
    assert farm_fetches(web, before_budget_run) <= BUDGET
    assert all(claimed[r] == HOSTS_PER_ROOT < BUDGET for r in ORDINARY)
    with db.connect() as conn:
        held = dict(conn.execute(text("SELECT root, held_until > now() FROM roots")).all())
    assert held[FARM] is True and not any(held[r] for r in ORDINARY)
    logs = "".join(w.log() for w in workers)
    assert "'hostcrawl/roots/over_budget': 1" in logs

    most = most_in_flight_per_root(web)
    print(f"most requests at once per root: {dict(most)}")
    assert max(most.values()) <= CONCURRENCY
    assert most[FARM] == CONCURRENCY  # the limit was reached, and held


def wildcard_outcome(db) -> str | None:
    with db.connect() as conn:
        return conn.execute(
            text("SELECT outcome FROM wildcard_probes WHERE root = :r"), {"r": FARM}
        ).scalar()
