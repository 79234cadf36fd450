"""A slow web with more hosts due than the worker starts with in flight: the in-flight
limit ramps up to them (crawler/extensions/in_flight.py), every host is crawled once.

300 hosts over 150 roots (ROOT_CONCURRENCY 2: every one of them claimable at once), each
answering robots.txt and its page after 1.0-1.5 s. The worker starts at 128 hosts in
flight; the peak it counts in its stats must pass that. The fakeweb_factory checks at
teardown that no host was fetched twice.
"""

from __future__ import annotations

import re

from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.extensions.in_flight import START_IN_FLIGHT
from tests.fakeweb import World

ROOTS = 150
HOSTS_PER_ROOT = 2


def stat(log: str, name: str) -> int:
    found = re.findall(rf"'{re.escape(name)}': (\d+)", log)
    assert found, f"the worker's log has no {name}"
    return int(found[-1])


def test_more_hosts_due_than_the_starting_limit_are_all_in_flight_at_once(
    db, fakeweb_factory, crawl
):
    world = World(seed=52)
    hosts = []
    for r in range(ROOTS):
        for name in (f"root{r:03}.test", f"www.root{r:03}.test")[:HOSTS_PER_ROOT]:
            hosts.append(world.answer_after(world.site(name), 1.0 + (len(hosts) % 6) / 10))
    world.slow_dns(0.02, 0.08)
    assert len(hosts) > START_IN_FLIGHT
    queue.seed(db, hosts)
    worker = crawl(fakeweb_factory(world), "https", ROOT_CONCURRENCY=HOSTS_PER_ROOT)

    with db.connect() as conn:
        outcomes = dict(conn.execute(text("SELECT hostname, outcome FROM hosts")).all())
    assert outcomes == dict.fromkeys(hosts, "OK")
    log = worker.log()
    # Read from the worker's own count, not timed: the limit went past where it started,
    # and so did the hosts in flight at once.
    assert stat(log, "hostcrawl/in_flight/limit_peak") > START_IN_FLIGHT
    assert stat(log, "hostcrawl/in_flight/peak") > START_IN_FLIGHT
    # MAX_IN_FLIGHT was sized by the machine (no -s): by the memory budget and the open
    # files limit the worker raised at start, and logged.
    assert stat(log, "hostcrawl/in_flight/maximum") >= len(hosts)
    assert stat(log, "hostcrawl/open_files_limit") > 0
    assert "hostcrawl: open files limit" in log
    # The resolver's figures: every host looked up, at most one lookup per host.
    assert 0 < stat(log, "hostcrawl/dns/lookups") <= len(hosts)
    assert stat(log, "hostcrawl/dns/in_flight_peak") > 1
