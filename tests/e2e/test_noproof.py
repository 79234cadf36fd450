"""No proof, no block: a crawl that has never seen the world answer blocks nothing.

Real `scrapy crawl hosts` runs against fakeweb whose resolver is silent, or
answers NXDOMAIN to every name, from the first second: no host has ever
answered, so there is no canary and no proof. Hosts of several roots fail with
nothing answering: our outage. No block, and no host is settled as failed; each
is held back until the world answers (given back, due, when the worker stops).
"""

from __future__ import annotations

import re
from collections import Counter

from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries, world_silences
from tests.e2e.conftest import wait_until
from tests.fakeweb import World
from tests.unit.test_metrics import free_port
from tests.unit.test_metrics_worker import scrape

RETRY_AFTER = 2  # OUTAGE_RETRY_AFTER, seconds: the outage's watch
SUBDOMAINS = 60
# Several roots: with no canary, one root failing is that root's failure, not an outage.
ROOTS = 3


def quiet_root(root: str = "quiet.test") -> tuple[World, list[str]]:
    """60 live subdomains of one root and of two more like it."""
    world = World()
    roots = [root, *(f"r{i}-{root}" for i in range(1, ROOTS))]
    names = [f"n{i:02}.{roots[i % ROOTS]}" for i in range(SUBDOMAINS)]
    for name in names:
        world.site(name)
    return world, names


def start_held_back(db, web, start_crawler, names: list[str], failure: str, **settings):
    """Seed `names`, start a worker and wait until each one's `failure` was held back;
    then the worker's /metrics (if METRICS_PORT is set) and the panel's word on the
    world's silence are read, and the worker is stopped."""
    queue.seed(db, names)
    # A held-back host keeps its claim (and its root's slot): every host at once.
    worker = start_crawler(
        web,
        ROOT_CONCURRENCY=SUBDOMAINS,
        RETRY_TIMES=0,
        OUTAGE_RETRY_AFTER=RETRY_AFTER,
        LOG_LEVEL="DEBUG",  # each host held back is a DEBUG line; the outage, a few at INFO
        **settings,
    )

    def every_host_held_back() -> bool:
        log = worker.log()
        return all(f"{name}: {failure} while" in log for name in names)

    wait_until(every_host_held_back, 120, f"every host's {failure} to be held back")
    metrics = scrape(settings["METRICS_PORT"]) if "METRICS_PORT" in settings else {}
    with db.connect() as conn:
        silence = world_silences.current(conn)  # what the panel's banner says meanwhile
    worker.stop()
    return worker, metrics, silence


def assert_nothing_settled(db, names: list[str]) -> None:
    """Not blocked, no failure in a window, no host settled or put off: each was held
    back, and given back due when the worker stopped."""
    assert deny_entries.list_entries(db, "blocked") == []
    with db.connect() as conn:
        window = conn.execute(text("SELECT count(*) FROM trap_window"))
        assert window.scalar() == 0
        rows = conn.execute(
            text(
                "SELECT h.outcome, h.held_tries, q.next_claim_at <= now() AS due,"
                " q.claimed_by IS NULL AS free"
                " FROM hosts h JOIN queue q USING (hostname, root) WHERE h.hostname = ANY(:n)"
            ),
            {"n": names},
        ).all()
    assert len(rows) == SUBDOMAINS
    assert {r.outcome for r in rows} == {None}
    assert all(r.held_tries >= 1 for r in rows)
    assert all(r.due and r.free for r in rows), "a stopped worker kept a host held back"


def test_dns_silent_from_the_start_blocks_nothing_and_every_host_is_fetched_after(
    db, fakeweb_factory, start_crawler, crawl
):
    world, names = quiet_root()
    web = fakeweb_factory(world)
    web.set_dns_silent(True)

    worker, metrics, silence = start_held_back(
        db, web, start_crawler, names, "DNS_TIMEOUT", METRICS_PORT=free_port()
    )

    assert_nothing_settled(db, names)
    unproven_since = metrics[("hostcrawl_world_unproven_since_seconds", ())]
    assert unproven_since > 0  # a moment, where 0 says the world answers
    assert silence.never_answered and silence.held_back >= 1
    # Why, in the banner and the log: the layer, its top error, the settings to check.
    assert silence.failures.layer == "dns" and silence.failures.top_error == "DNS_TIMEOUT"
    assert silence.settings_to_check == f"DNS_NAMESERVERS={web.nameservers}; no CANARY_HOSTS set"
    log = worker.log()
    said = re.search(r"the world is not answering us \(DNS: (\d+) of (\d+) lookups failed", log)
    assert said and int(said[1]) >= 1, log[-3000:]
    assert f"DNS_TIMEOUT (DNS_NAMESERVERS={web.nameservers}; no CANARY_HOSTS set)" in log
    assert f"no host has answered yet in this database, and {ROOTS} roots failed" in log
    assert "'hostcrawl/world/unproven_since': datetime" in log
    web.set_dns_silent(False)
    worker = crawl(web, ROOT_CONCURRENCY=SUBDOMAINS, OUTAGE_RETRY_AFTER=RETRY_AFTER)
    with db.connect() as conn:
        outcomes = conn.execute(
            text("SELECT outcome FROM hosts WHERE hostname = ANY(:n)"), {"n": names}
        ).scalars()
        assert Counter(outcomes) == {"OK": SUBDOMAINS}
    assert set(web.fetch_counts()) >= set(names)


def test_a_resolver_answering_nxdomain_to_every_name_blocks_nothing(
    db, fakeweb_factory, start_crawler
):
    world, names = quiet_root("lied.test")
    web = fakeweb_factory(world)
    web.set_dns_nxdomain(True)

    worker, _, silence = start_held_back(db, web, start_crawler, names, "DNS_NXDOMAIN")

    assert_nothing_settled(db, names)
    assert silence.never_answered and silence.failures.top_error == "DNS_NXDOMAIN"
    assert "the world is not answering us (DNS: " in worker.log()


def test_a_canary_that_answered_then_gets_nxdomain_with_the_rest_blocks_nothing(
    db, fakeweb_factory, start_crawler, crawl
):
    world, names = quiet_root("lied.test")
    world.site("hub.test")
    web = fakeweb_factory(world)
    queue.seed(db, ["hub.test"])
    crawl(web)  # hub.test answers: a canary
    web.set_dns_nxdomain(True)

    worker, _, silence = start_held_back(db, web, start_crawler, names, "DNS_NXDOMAIN")

    assert_nothing_settled(db, names)
    assert not silence.never_answered  # hub.test answered once: it is our resolver that lies
    assert "canaries: hub.test DNS_NXDOMAIN" in worker.log()
