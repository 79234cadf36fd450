"""A worker gives back what a burst of hostile responses took (issue 45, item 4).

One worker crawls ordinary hosts, then a burst of hostile ones (tests/fakeweb/hostile.py:
a 2 MB page of registered domains, 200 KB of Link headers, five redirect hops of 2 MB of
names each, a robots.txt of 2 MB of Sitemap lines, a certificate of 6,500 names), then
ordinary hosts again. Each ordinary load is the same (LOAD slow hosts: a full worker),
so what the worker holds after the second, over what it held after the first, is what
the burst left: within RSS_RETURN_MB (docs/crawl.md, "Memory for one response"). Its
in-flight limit comes back up to where it was before the burst.
"""

from __future__ import annotations

import urllib.request

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from tests.e2e.conftest import (
    ONE_WORKER_MEMORY,
    CrawlerProcess,
    assert_within_bounds,
    crawl_settings,
    wait_until,
)
from tests.fakeweb import World
from tests.fakeweb.hostile import HOSTILE
from tests.unit.test_metrics import free_port, samples

LOAD = 400  # ordinary hosts each side of the burst, answering after ANSWER_AFTER s: a full worker
ANSWER_AFTER = 2.0  # seconds: the worker is full for long enough to raise its limit a few times
BEFORE = [f"before{i}.test" for i in range(LOAD)]
AFTER = [f"after{i}.test" for i in range(LOAD)]
BURST = {  # host: its case, each naming names of its own
    "flood.test": "2 MiB page of registered domains",
    "heads.test": "200 KB of Link header lines",
    "hops.test": "5 redirect hops, 2 MiB of names each",
    "robots.test": "robots.txt of 2 MiB of Sitemap lines",
    "cert.test": "certificate of 6,500 names",
}
NAMES_CAP = 200  # MAX_NAMES_PER_PAGE here: the burst's names are queued, then crawled
# The bound docs/crawl.md states: RSS after a burst over RSS before it.
RSS_RETURN_MB = 64
MAX_IN_FLIGHT = 128  # the limit starts there; a burst may cut it (to 64 at least)
SETTLED_WITHIN = 120  # seconds: a bound on each wait, not a duration under test


def burst_world() -> World:
    world = World()
    for name in BEFORE + AFTER:
        world.answer_after(world.site(name), ANSWER_AFTER)
    for i, (host, case) in enumerate(BURST.items()):
        HOSTILE[case].build(world, host, f"b{i}x")
    return world


def rss_mb(pid: int) -> float:
    """A process's resident memory now (VmRSS), in MB."""
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return int(fields["VmRSS"].split()[0]) / 1024


def metric(port: int, name: str) -> float:
    """One of the worker's metrics now (0 while it cannot be read)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return samples(response.read().decode()).get((name, ()), 0)
    except OSError:
        return 0


def settled(db, names) -> bool:
    with db.connect() as conn:
        sql = "SELECT count(*) FROM hosts WHERE hostname = ANY(:n) AND outcome IS NOT NULL"
        return conn.execute(text(sql), {"n": list(names)}).scalar() == len(names)


def drained(db) -> bool:
    """Every host known has settled: the burst's names too."""
    with db.connect() as conn:
        return not conn.execute(text("SELECT count(*) FROM hosts WHERE outcome IS NULL")).scalar()


def outcomes(db, names) -> dict[str, str]:
    with db.connect() as conn:
        sql = "SELECT hostname, outcome FROM hosts WHERE hostname = ANY(:n)"
        return dict(conn.execute(text(sql), {"n": list(names)}).all())


def names_saved(db) -> dict[str, int]:
    with db.connect() as conn:
        sql = "SELECT discovered_from, count(*) FROM hosts GROUP BY discovered_from"
        return dict(conn.execute(text(sql)).all())


@pytest.mark.one_server(ONE_WORKER_MEMORY)
def test_a_worker_gives_back_the_memory_and_the_room_a_hostile_burst_took(
    db, fakeweb_factory, tmp_path
):
    web = fakeweb_factory(burst_world())
    port = free_port()
    settings = crawl_settings(
        web,
        "https",
        CLOSE_WHEN_DRAINED=0,
        METRICS_PORT=port,
        RETRY_TIMES=0,
        MAX_NAMES_PER_PAGE=NAMES_CAP,
        MAX_IN_FLIGHT=MAX_IN_FLIGHT,
        # Five hops of 2 MB, read beside the other floods by a busy worker: more than the
        # e2e crawls' 3 s (production: 30 s).
        DOWNLOAD_TIMEOUT=15,
    )
    queue.seed(db, BEFORE)
    worker = CrawlerProcess(settings, tmp_path / "crawler.log")
    pid = worker.proc.pid
    given = lambda: metric(port, "hostcrawl_memory_given_back_total")  # noqa: E731
    limit = lambda: metric(port, "hostcrawl_in_flight_limit")  # noqa: E731
    try:
        wait_until(lambda: drained(db), SETTLED_WITHIN, "the hosts before")
        rss_before, limit_before, given_before = rss_mb(pid), limit(), given()

        queue.seed(db, list(BURST))
        wait_until(lambda: settled(db, BURST), SETTLED_WITHIN, "the burst")
        queue.seed(db, AFTER)
        wait_until(lambda: limit() >= limit_before, SETTLED_WITHIN, "the limit back up")
        wait_until(lambda: drained(db), SETTLED_WITHIN, "the hosts after, and the burst's names")
        wait_until(
            lambda: rss_mb(pid) <= rss_before + RSS_RETURN_MB,
            SETTLED_WITHIN,
            f"RSS back within {RSS_RETURN_MB} MB of its {rss_before:.0f} MB before the burst",
        )
        given_after = given()
    finally:
        worker.stop()
    assert given_after > given_before, "the burst's memory was given back"
    found = outcomes(db, [*BEFORE, *AFTER, *BURST])
    assert {name: found[name] for name in BEFORE + AFTER} == dict.fromkeys(BEFORE + AFTER, "OK")
    assert {name: found[name] for name in BURST} == dict.fromkeys(BURST, "OK")
    saved = names_saved(db)
    assert {host: saved[host] for host in BURST} == dict.fromkeys(BURST, NAMES_CAP)
    assert_within_bounds(db, worker.log(), NAMES_CAP)  # the five read at once, too
    assert "Traceback" not in worker.log()
