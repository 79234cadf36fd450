"""Faults: a database that goes away, workers killed at random (docs/reliability.md)."""

from __future__ import annotations

import importlib.util
import random
import time

import pytest
from sqlalchemy import text

from crawler.db.crawl import claims, queue
from crawler.db.operators import accounts
from crawler.db.rules import deny_entries
from tests.e2e.conftest import KILLED_MANY, host_facts, known_hosts, leases_ran_out, wait_until
from tests.fakeweb import World

OUTAGE_SECONDS = 30
MAX_IN_FLIGHT = 8  # a worker's hosts in flight, its own sizing capped
KILLS = 12


def crawled_pages(web) -> int:
    return len(web.fetch_counts(path="/"))


def hosts_put_off(db) -> set[str]:
    """The hosts settled as poison pills (claimed after two leases ran out in flight)."""
    with db.connect() as conn:
        query = text("SELECT hostname FROM hosts WHERE outcome = 'HTTP_UNFINISHED'")
        return set(conn.execute(query).scalars())


def outage_logged(worker) -> bool:
    return "database unavailable" in worker.log() or "listener lost the database" in worker.log()


@pytest.mark.one_server(
    "stops the embedded server; the cluster's coordinator restart and worker node outage"
    " are test_workers_and_nodes.py's"
)
def test_database_restart_and_outage_mid_crawl(db, fakeweb_factory, start_crawler, postgres):
    world = World(seed=5, delay=0.02)
    names = world.graph(400, roots=["alpha.test", "beta.test", "gamma.test"])
    web = fakeweb_factory(world)
    queue.seed(db, [names[0]])
    workers = [start_crawler(web, CLAIM_BATCH=4, MAX_IN_FLIGHT=8) for _ in range(2)]

    wait_until(lambda: crawled_pages(web) >= 60, 90, "60 pages before the restart")
    postgres.stop()
    postgres.start()
    wait_until(lambda: crawled_pages(web) >= 150, 90, "150 pages before the outage")
    postgres.stop()
    stopped_at = time.monotonic()
    panel_answers = panel_during_outage()
    wait_until(lambda: all(outage_logged(w) for w in workers), 30, "both workers to notice")
    wait_until(lambda: time.monotonic() - stopped_at >= OUTAGE_SECONDS, 60, "the outage to last")
    paused_at = crawled_pages(web)
    postgres.start()
    started_at = time.monotonic()
    wait_until(lambda: crawled_pages(web) > paused_at + 8, 60, "the crawl to resume")
    print(f"crawl resumed {time.monotonic() - started_at:.1f}s after the database came back")
    for worker in workers:
        worker.wait()

    assert known_hosts(db) == set(names)
    with db.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM hosts WHERE outcome IS NULL")).scalar() == 0
        assert (
            conn.execute(text("SELECT count(*) FROM queue WHERE claimed_by IS NOT NULL")).scalar()
            == 0
        )
    if panel_answers is not None:
        assert panel_answers["healthz"] == 503 and panel_answers["login"] == 503
        assert panel_after_outage() == 200


def panel_during_outage() -> dict | None:
    """What the panel answers while the database is down (None without a panel)."""
    if importlib.util.find_spec("webpanel") is None:
        return None
    from webpanel import create_app

    client = create_app({"TESTING": True, "SECRET_KEY": "test"}).test_client()
    return {
        "healthz": client.get("/healthz").status_code,
        "login": client.get("/login").status_code,
    }


def panel_after_outage() -> int:
    from webpanel import create_app

    client = create_app({"TESTING": True, "SECRET_KEY": "test"}).test_client()
    return wait_until(
        lambda: client.get("/healthz").status_code == 200 and 200,
        30,
        "the panel to recover by itself",
    )


@pytest.mark.one_server(
    "the suite's time: test_workers_and_nodes.py kills a crawler with claims on the cluster"
)
@pytest.mark.refetches(KILLED_MANY)
def test_kill_storm(db, fakeweb_factory, start_crawler):
    rng = random.Random(20)
    world = World(seed=9, delay=0.01)
    names = world.graph(520, roots=["alpha.test", "beta.test", "gamma.test", "delta.test"])
    web = fakeweb_factory(world)
    queue.seed(db, [names[0]])
    settings = {
        "CLAIM_LEASE": 2,
        "CLAIM_BATCH": 4,
        "MAX_IN_FLIGHT": MAX_IN_FLIGHT,
        "CLOSE_WHEN_DRAINED": 0,
    }
    running = []
    for _ in range(KILLS):  # each at a random point of the crawl
        while len(running) < 2:
            running.append(start_crawler(web, **settings))
        target = crawled_pages(web) + rng.randint(2, 15)
        wait_until(
            lambda t=target: crawled_pages(web) >= t or not claims.crawl_pending(db),
            60,
            f"{target} pages",
        )
        running.pop(rng.randrange(len(running))).kill()
    for worker in running:
        worker.kill()

    wait_until(lambda: leases_ran_out(db), 60, "the killed workers' leases to run out")
    drain = [start_crawler(web, CLAIM_LEASE=2) for _ in range(2)]
    for worker in drain:
        worker.wait()

    # A host in flight at two kills is a poison pill to the claim (crawler.db.crawl.unfinished):
    # put off until RECRAWL_AFTER, still queued; the hosts only it links to wait for then.
    put_off = hosts_put_off(db)
    assert len(put_off) <= KILLS * MAX_IN_FLIGHT
    known = known_hosts(db)
    assert known == world.reachable(names[0], unexplored=put_off)
    with db.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT count(*) AS hosts, count(q.hostname) AS queued,"
                " count(*) FILTER (WHERE h.outcome IS NULL) AS uncrawled,"
                " count(*) FILTER (WHERE q.claimed_by IS NOT NULL) AS stranded"
                " FROM hosts h LEFT JOIN queue q USING (hostname)"
            )
        ).one()
    assert (rows.hosts, rows.queued, rows.uncrawled, rows.stranded) == (
        len(known),
        len(known),
        0,
        0,
    )
    assert host_facts(db, names[0]).crawl_count >= 1


LAST_CHANGE = "last-change.test"


def test_operators_change_the_lists_while_workers_crawl(db, fakeweb_factory, start_crawler):
    from crawler.db.operators.accounts import api_token_hash
    from webpanel import create_app

    world = World(seed=13, delay=0.01)
    roots = ["alpha.test", "beta.test", "gamma.test", "delta.test"]
    names = world.graph(400, roots=roots)
    web = fakeweb_factory(world)
    accounts.create_user(db, "op", "operator password")
    with db.begin() as conn:
        conn.execute(text("UPDATE users SET api_token_hash = :h"), {"h": api_token_hash("t")})
    api = create_app({"TESTING": True, "SECRET_KEY": "test"}).test_client()
    auth = {"Authorization": "Bearer t"}
    queue.seed(db, [names[0]])
    workers = [start_crawler(web, CLAIM_BATCH=4, MAX_IN_FLIGHT=MAX_IN_FLIGHT) for _ in range(2)]

    changes = 0
    for i in range(60):  # flip entries while the crawl runs
        domain = ("gamma.test", "delta.test")[i % 2]
        for url in ("/api/no_follow/add", "/api/no_follow/remove"):
            answer = api.post(url, json={"names": [domain], "note": f"round {i}"}, headers=auth)
            assert answer.status_code == 200, answer.get_json()
            changes += answer.get_json()["results"][0]["status"] in ("added", "removed")
        deny_entries.upsert_blocked(db, "beta.test", f"round {i}")
        answer = api.post("/api/blocked/unblock", json={"names": ["beta.test"]}, headers=auth)
        assert answer.json["results"][0]["status"] == "unblocked"
        changes += 2
    answer = api.post("/api/no_follow/add", json={"names": ["gamma.test"]}, headers=auth)
    changes += 1
    # The last change has a name of its own, so only it can write its log line (gamma's
    # lines come from every round); notifications arrive in commit order, so a worker
    # that heard it heard the gamma.test entry before it.
    for url in ("/api/no_follow/add", "/api/no_follow/remove"):
        answer = api.post(url, json={"names": [LAST_CHANGE]}, headers=auth)
        assert answer.json["results"][0]["status"] in ("added", "removed")
        changes += 1
    wait_until(
        lambda: all(
            f"deny list: remove {LAST_CHANGE}" in w.log() or w.proc.poll() is not None
            for w in workers
        ),
        60,
        "every running worker to hear the last change",
    )
    seen_before_heard = len(web.requests())  # fakeweb's log, in the order it was asked
    for worker in workers:
        worker.wait()  # no deadlock: both finish

    assert deny_entries.deny_entries(db) == [("gamma.test", "no_follow")]  # no lost update
    with db.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM change_log")).scalar() == changes
    # Once a worker has heard the entry, its downloader middleware turns every gamma.test
    # request away; only those already past it can still reach fakeweb: the downloader's
    # MAX_IN_FLIGHT places (queued in a slot or in flight), each with its robots.txt.
    late = [r for r in web.requests()[seen_before_heard:] if r["host"].endswith("gamma.test")]
    assert len(late) <= len(workers) * 2 * MAX_IN_FLIGHT, f"fetched after: {late}"
    # A worker drains when nothing is due: with the rounds still flipping, that can be a
    # moment when beta.test is blocked and the rest is done (the cluster's slower rounds
    # make it likely). What the rounds left routable, a later run crawls.
    start_crawler(web, CLAIM_BATCH=4, MAX_IN_FLIGHT=MAX_IN_FLIGHT).wait()
    # Links met while their domain was listed were dropped (that is the rule); every
    # host that was saved and is routable now was crawled: nothing stranded.
    with db.connect() as conn:
        stranded = conn.execute(
            text(
                # Within each root (the entries here are roots): one shard on a cluster.
                "SELECT q.* FROM hosts JOIN queue q USING (hostname, root) WHERE outcome IS NULL"
                " AND q.status_reason IS NULL AND q.denied_by IS NULL AND NOT EXISTS ("
                "  SELECT 1 FROM queue d WHERE d.root = q.root"
                "  AND d.hostname = ANY(host_parents(q.hostname)) AND d.status_reason IS NOT NULL)"
            )
        ).all()
    assert stranded == [] and known_hosts(db) <= set(names) | {"beta.test"}
