"""A crawl of a small slow web: slow answers, hosts that hang after TLS, names without DNS.

Small timeouts (settings) keep it short; what it shows holds at any timeout:
every host settles with its own outcome, a root whose hosts only hang at
HTTP is no trap and holds back no other root, and no root ever has more than
ROOT_CONCURRENCY requests being answered at once (fakeweb's own count).
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from tests.e2e.conftest import SLOW_CANARIES
from tests.fakeweb import World

GOOD = ["good.test", *(f"{x}.good.test" for x in "abcdefg")]  # answer after 0.05-0.15 s
HUNG = ["hung.test", *(f"{x}.hung.test" for x in "abcd")]  # TCP and TLS, then silence
# A host that hangs hangs on its robots.txt first: unreachable (RFC 9309), its page not
# asked for.
HUNG_OUTCOME = "HTTP_ROBOTS_UNREACHABLE"
MIXED = {  # host: expected outcome
    "mixed.test": "OK",
    "a.mixed.test": "OK",
    "b.mixed.test": "HTTP_ROBOTS_UNREACHABLE",
    "c.mixed.test": "DNS_TIMEOUT",
    "d.mixed.test": "DNS_TIMEOUT",
}
ROOT_CONCURRENCY = 2
# Asked (HEAD) by the self-check when a failure comes: a root of its own, so that its
# requests, which no claim holds, do not mix into the counts of the crawled roots.
CANARY = "canary.test"


def slow_world() -> World:
    world = World(seed=11)
    for i, host in enumerate(GOOD + ["mixed.test", "a.mixed.test"]):
        world.answer_after(world.site(host), 0.05 + 0.01 * i)
    for host in [*HUNG, "b.mixed.test"]:
        world.hang(host)
    for host in ("c.mixed.test", "d.mixed.test"):
        world.host(host, "silent")
    world.site(CANARY)
    world.slow_dns(0.02, 0.08)
    return world


@pytest.mark.refetches(SLOW_CANARIES)
def test_a_slow_web_settles_every_host_and_stays_polite(db, fakeweb_factory, crawl):
    web = fakeweb_factory(slow_world())
    expected = {h: "OK" for h in GOOD} | dict.fromkeys(HUNG, HUNG_OUTCOME) | MIXED
    queue.seed(db, list(expected))
    worker = crawl(
        web,
        "https",
        DOWNLOAD_TIMEOUT=3,
        CONNECT_TIMEOUT=1,
        DNS_TIMEOUT=0.5,  # asked twice
        ROOT_CONCURRENCY=ROOT_CONCURRENCY,
        CANARY_HOSTS=CANARY,
        TRAP_WINDOW=3,  # a root whose last 3 subdomains failed below HTTP would be blocked
    )

    with db.connect() as conn:
        outcomes = dict(conn.execute(text("SELECT hostname, outcome FROM hosts")).all())
        denied = conn.execute(text("SELECT hostname FROM queue WHERE status_reason IS NOT NULL"))
        denied = denied.scalars().all()
        hung_window = "SELECT hostname, outcome FROM trap_window WHERE root = 'hung.test'"
        window = dict(conn.execute(text(hung_window)).all())
    assert outcomes == expected
    # Hanging at HTTP is an answer's timeout, not a trap's failure: the root's window
    # is full (TRAP_WINDOW of its 4 subdomains) of them, and nothing is blocked.
    assert denied == []
    assert list(window.values()) == [HUNG_OUTCOME] * 3

    # A hung host waited out one download timeout, on its robots.txt; its page request
    # settled at once, robots.txt unreachable, without a second wait; nothing was retried.
    for host in HUNG:
        assert [r["path"] for r in web.fetches(host, path=None)] == ["/robots.txt"]
    assert "hostcrawl/robotstxt/unreachable" in worker.log()

    # The hung root held back no other: every page of good.test was fetched while
    # hung.test still had hosts waiting for their turn.
    good_done = max(r["t"] for h in GOOD for r in web.fetches(h))
    last_hung_start = max(r["t"] for h in HUNG for r in web.fetches(h, path=None))
    assert good_done < last_hung_start

    # Politeness: never more than ROOT_CONCURRENCY requests of one root at once, and
    # the limit was reached (the count is live).
    peak: dict[str, int] = {}
    for r in web.requests():
        if r["host"] == CANARY:
            continue
        assert r["method"] == "GET"
        root = ".".join(r["host"].split(".")[-2:])
        peak[root] = max(peak.get(root, 0), r["root_in_flight"])
    assert max(peak.values()) == ROOT_CONCURRENCY
    assert peak["hung.test"] == ROOT_CONCURRENCY

    # The worker's own figures are in its stats.
    for key in ("hostcrawl/in_flight/peak", "hostcrawl/reactor_lag_ms", "hostcrawl/rss_mb"):
        assert f"'{key}'" in worker.log()


def test_a_root_at_its_limit_is_not_claimed_again_until_one_of_its_hosts_settles(
    db, fakeweb_factory, crawl
):
    """A claim that comes back short (what is due is held by its root) waits for a host to
    settle: claiming again at once would come back empty, at the database's cost."""
    world = World(seed=12)
    hosts = ["queue.test", *(f"{x}.queue.test" for x in "abcde")]
    for host in hosts:
        world.answer_after(world.site(host), 0.1)
    queue.seed(db, hosts)
    # One host of the root at a time; no poll while waiting (a settled host wakes the claim).
    worker = crawl(fakeweb_factory(world), "https", ROOT_CONCURRENCY=1, CLAIM_POLL_INTERVAL=30)

    claims = int(re.search(r"'hostcrawl/claims': (\d+)", worker.log())[1])
    # One claim per host (each after the one before it settled) and the last, empty one.
    assert claims <= len(hosts) + 1
    with db.connect() as conn:
        crawled = conn.execute(text("SELECT count(*) FROM hosts WHERE outcome = 'OK'")).scalar()
    assert crawled == len(hosts)


def test_with_few_hosts_due_a_root_s_next_host_is_claimed_as_soon_as_one_settles(
    db, fakeweb_factory, crawl
):
    """The tail: the worker's room is nearly all held by hosts that hang, and a root's third
    host is due. The last claim came back short, so one free slot is worth a claim: the
    third host goes as soon as one of its root's first two settles, not once a CLAIM_BATCH
    of slots is free (when the hanging hosts time out)."""
    world = World(seed=13)
    hanging = [world.hang(f"hang{i:02}.test") for i in range(61)]
    tail = ["tail.test", "a.tail.test", "b.tail.test"]
    for host in tail:
        world.answer_after(world.site(host), 0.1)
    world.site(CANARY)
    queue.seed(db, hanging)  # due first: the first claim takes them all
    queue.seed(db, tail)
    crawl(
        fakeweb_factory(world),
        "https",
        MAX_IN_FLIGHT=64,  # the first claim: 61 hanging hosts, 2 of tail.test (short of 64)
        ROOT_CONCURRENCY=2,
        DOWNLOAD_TIMEOUT=4,
        CONNECT_TIMEOUT=1,
        CLAIM_POLL_INTERVAL=30,  # not a poll that frees it
        CANARY_HOSTS=CANARY,
    )

    with db.connect() as conn:
        settled = dict(conn.execute(text("SELECT hostname, last_crawled_at FROM hosts")).all())
        outcomes = dict(conn.execute(text("SELECT hostname, outcome FROM hosts")).all())
    assert {outcomes[h] for h in tail} == {"OK"}
    assert {outcomes[h] for h in hanging} == {HUNG_OUTCOME}
    # Every host of tail.test settled before the first hanging host timed out.
    assert max(settled[h] for h in tail) < min(settled[h] for h in hanging)
