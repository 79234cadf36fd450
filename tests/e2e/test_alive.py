"""Alive is alive: HTTP-only hosts, our own resolver or network going away.

Real `scrapy crawl hosts` runs against fakeweb: a root is blocked only for its
own failures, never for a scheme it does not serve or for an outage of ours.
"""

from __future__ import annotations

import re
import time
from collections import Counter

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.e2e.conftest import CANARY_CHECKS, OUTAGE_RETRIES, host_facts, known_hosts, wait_until
from tests.fakeweb import World

OUTAGE_SECONDS = 30


def outcomes_under(db, root: str) -> Counter:
    with db.connect() as conn:
        rows = conn.execute(
            text("SELECT outcome FROM hosts WHERE root = :r AND hostname <> :r"), {"r": root}
        )
        return Counter(r.outcome for r in rows)


def stat(worker, name: str) -> int:
    found = re.findall(rf"'{re.escape(name)}': (\d+)", worker.log())
    return int(found[-1]) if found else 0


def test_an_http_only_root_is_crawled_over_http_and_never_blocked(db, fakeweb_factory, crawl):
    world = World()
    names = [f"dept{i:02}.campus.test" for i in range(60)]
    world.site("hub.test", links=[f"https://{n}/" for n in names])
    for i, name in enumerate(names):
        world.site(name, links=[f"http://found{i:02}.test/"])
        world.host(name, "http_only" if i % 2 else "http_only_refused")  # TLS broken / refused
        world.site(f"found{i:02}.test")
    web = fakeweb_factory(world)
    queue.seed(db, ["hub.test"])

    worker = crawl(web, scheme="https", CLAIM_BATCH=8, RETRY_TIMES=0)

    assert deny_entries.list_entries(db, "blocked") == []
    assert outcomes_under(db, "campus.test") == {"OK": 60}
    assert all(host_facts(db, n).scheme == "http" for n in names)
    assert host_facts(db, "hub.test").scheme == "https"
    assert {f"found{i:02}.test" for i in range(60)} <= known_hosts(db)  # their links count
    assert (
        stat(worker, "hostcrawl/fallback/tried") >= 60
        and stat(worker, "hostcrawl/fallback/answered") >= 60
    )
    # robots.txt was asked for on the scheme that answered.
    assert len(web.fetches(path="/robots.txt", scheme="http", host=names[1])) == 1


@pytest.mark.refetches(CANARY_CHECKS)
def test_a_root_failing_on_both_schemes_is_still_blocked(db, fakeweb_factory, crawl):
    world = World()
    names = [f"h{i:02}.dead.test" for i in range(60)]
    world.site("hub.test", links=[f"https://{n}/" for n in names])
    for i, name in enumerate(names):
        world.host(name, "refused" if i % 2 else "reset")
    web = fakeweb_factory(world)
    queue.seed(db, ["hub.test"])

    crawl(web, scheme="https", CLAIM_BATCH=8, RETRY_TIMES=0)

    [entry] = deny_entries.list_entries(db, "blocked")
    assert entry["hostname"] == "dead.test"
    assert "TCP_REFUSED" in entry["blocked_reason"] and "TCP_RESET" in entry["blocked_reason"]


def outage_world() -> World:
    """Live sites, 220 live subdomains of big.test and an NXDOMAIN trap, all linked
    from one hub."""
    world = World()
    live = [f"s{i:03}.big.test" for i in range(220)]
    junk = [f"j{i:02}.trap.test" for i in range(70)]
    sites = [f"site{i}.test" for i in range(6)]
    world.site("hub.test", links=[f"http://{n}/" for n in sites + live + junk])
    for name in sites + live:
        world.site(name)
    world.zone("trap.test", "nxdomain")
    return world


def crawl_through_an_outage(db, fakeweb_factory, start_crawler, cut, **settings):
    """Crawl the outage world; `cut(web, True)` cuts us off for 30 s once the hub's
    links are queued (the hub answered, so it is a canary), then `cut(web, False)`."""
    web = fakeweb_factory(outage_world())
    queue.seed(db, ["hub.test"])
    worker = start_crawler(web, CLAIM_BATCH=16, OUTAGE_RETRY_AFTER=3, **settings)
    wait_until(lambda: len(known_hosts(db)) > 290, 60, "the hub's links to be queued")
    cut(web, True)
    started = time.monotonic()
    wait_until(lambda: time.monotonic() - started >= OUTAGE_SECONDS, 60, "the outage to last")
    cut(web, False)
    worker.wait()
    # The trap is blocked (after the outage at the latest), and nothing else is.
    assert [e["hostname"] for e in deny_entries.list_entries(db, "blocked")] == ["trap.test"]
    assert outcomes_under(db, "big.test") == {"OK": 220}
    assert stat(worker, "hostcrawl/outage/retried") > 0
    return worker


@pytest.mark.refetches(OUTAGE_RETRIES)
def test_a_resolver_outage_blocks_nothing_and_every_live_host_ends_ok(
    db, fakeweb_factory, start_crawler
):
    worker = crawl_through_an_outage(
        db,
        fakeweb_factory,
        start_crawler,
        lambda web, on: web.set_dns_silent(on),
        TRAP_RECHECK_INTERVAL=2,
        DNS_TIMEOUT=1,
    )
    assert "the world is not answering us" in worker.log()


@pytest.mark.refetches(OUTAGE_RETRIES)
def test_a_network_outage_blocks_nothing(db, fakeweb_factory, start_crawler):
    worker = crawl_through_an_outage(
        db, fakeweb_factory, start_crawler, lambda web, on: web.set_network_down(on), RETRY_TIMES=0
    )
    # The trap's failures during the outage were held back, not put in its window: its
    # block came from failures before the outage (the crawl may reach the trap's names
    # before the cut) or after the world answered again, never during it.
    log = worker.log()
    blocked = log.index("blocked trap.test")
    assert (
        not log.index("the world is not answering us")
        < blocked
        < log.index("the world answers again")
    )
