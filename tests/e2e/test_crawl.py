"""The crawl end to end: real `scrapy crawl hosts` runs against fakeweb (the claim,
fetch, trap and deny rules of docs/design.md)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from sqlalchemy import text

from crawler.db.crawl import dropped_links, queue
from crawler.db.operators.accounts import create_user, new_api_token
from crawler.db.rules import deny_entries
from tests.conftest import insert_stale_row
from tests.e2e.conftest import (
    CANARY_CHECKS,
    KILLED,
    REDIRECT_TARGET,
    claims_held,
    host_facts,
    known_hosts,
    leases_ran_out,
    wait_until,
)
from tests.fakeweb import World
from tests.unit.test_cli import hostcrawl
from tests.unit.test_panel_support import panel_config
from webpanel import create_app


def test_discovery_from_one_seed_fetches_every_host_once(db, fakeweb_factory, crawl):
    world = World(seed=3)
    names = world.graph(
        150, roots=["alpha.test", "beta.test", "gamma.test", "delta.test"], messy=0.3
    )
    web = fakeweb_factory(world)
    queue.seed(db, [names[0]])

    crawl(web)

    assert known_hosts(db) == set(names) == world.reachable(names[0])
    counts = web.fetch_counts(path="/")
    assert set(counts) == set(names)
    assert max(counts.values()) == 1
    facts = host_facts(db, names[0])
    assert (facts.outcome, facts.http_status, facts.title) == ("OK", 200, f"Page of {names[0]}")
    assert facts.links_found >= 1 and facts.next_claim_at is not None and facts.claimed_by is None


SOCIAL_LINKS = [
    "http://SOCIAL.test:8080/x",
    "http://social.test./",
    "https://www.social.test/",
    "//api.Social.TEST/feed",
    "http://deep.www.social.test/",
    "http://notsocial.test/",
]


def test_no_follow_links_are_never_saved_nor_fetched(db, fakeweb_factory, crawl):
    world = World()
    world.site("hub.test", links=SOCIAL_LINKS)
    for name in ("social.test", "www.social.test", "api.social.test", "deep.www.social.test"):
        world.site(name, links=["http://leak.test/"])
    world.site("notsocial.test")
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(db, ["social.test"], note="giant platform")
    queue.seed(db, ["hub.test"])

    crawl(web)

    assert known_hosts(db) == {"hub.test", "notsocial.test", "social.test"}
    assert host_facts(db, "social.test").status_reason == "no_follow"  # the entry's own row
    assert set(web.fetch_counts(path=None)) == {"hub.test", "notsocial.test"}
    assert not [
        q
        for q in web.dns_queries()
        if q["name"].endswith("social.test") and q["name"] != "notsocial.test"
    ]
    assert host_facts(db, "hub.test").links_filtered == 5
    with db.connect() as conn:  # each entry's count, carried by the finish (/no_follow)
        assert dropped_links.links_dropped(conn, ["social.test"]) == {"social.test": 5}


def add_through_the_cli(db, name: str) -> None:
    run = hostcrawl("no-follow", "add", name)
    assert run.returncode == 0, run.stderr


def add_through_the_api(db, name: str) -> None:
    """POST /api/no_follow/add of a panel app on the same database, as a script does."""
    create_user(db, "door-api", "door api password")
    headers = {"Authorization": f"Bearer {new_api_token(db, 'door-api')}"}
    client = create_app(panel_config(db.url.render_as_string(hide_password=False))).test_client()
    answer = client.post("/api/no_follow/add", json={"names": [name]}, headers=headers)
    assert answer.status_code == 200, answer.get_data(as_text=True)


# The doors a no_follow comes in by: the writer the panel's form calls, the CLI (another
# process) and the API. Each must reach a running worker through NOTIFY, within seconds.
NO_FOLLOW_DOORS = {
    "writer": lambda db, name: deny_entries.add_no_follow(db, [name]),
    "cli": add_through_the_cli,
    "api": add_through_the_api,
}


@pytest.mark.parametrize("door", NO_FOLLOW_DOORS)
def test_no_follow_added_while_crawling_reaches_the_worker(
    db, fakeweb_factory, start_crawler, door
):
    world = World()
    world.site("late-hub.test", links=["http://x.late.test/", "http://kept.test/"])
    world.site("kept.test")
    web = fakeweb_factory(world)
    worker = start_crawler(web, CLOSE_WHEN_DRAINED=0)
    listening = "deny list: listening for changes"
    wait_until(lambda: listening in worker.log(), 60, "the crawler to listen for changes")

    NO_FOLLOW_DOORS[door](db, "late.test")
    # Heard within seconds, not at the next full reload of the list (a minute).
    wait_until(lambda: "deny list: add late.test" in worker.log(), 15, "the NOTIFY to arrive")
    queue.seed(db, ["late-hub.test"])
    wait_until(
        lambda: host_facts(db, "kept.test") and host_facts(db, "kept.test").outcome,
        60,
        "kept.test to be crawled",
    )
    worker.stop()

    assert "x.late.test" not in known_hosts(db)
    assert not web.fetches(host="x.late.test", path=None)


def trap_world(size: int = 300) -> World:
    world = World()
    world.site("hub.test", links=[f"http://n{i:03}.trap.test/" for i in range(size)])
    world.zone("trap.test", "nxdomain")
    return world


def test_trap_root_is_blocked_after_fifty_failures(db, fakeweb_factory, crawl):
    web = fakeweb_factory(trap_world())
    queue.seed(db, ["hub.test"])

    worker = crawl(web, CLAIM_BATCH=8)

    [entry] = deny_entries.list_entries(db, "blocked")
    assert entry["hostname"] == "trap.test"
    reason = entry["blocked_reason"]
    assert "subdomain generator" in reason and "last 50 unique subdomains of trap.test" in reason
    assert "DNS_NXDOMAIN 50" in reason
    queries = Counter(q["name"] for q in web.dns_queries() if q["name"].endswith(".trap.test"))
    # robots.txt and the page share one lookup: NXDOMAIN is cached and never retried. The
    # self-check before the block asks the window's 3 newest names once more, fresh.
    asked_again = [name for name, n in queries.items() if n > 1]
    assert max(queries.values()) <= 2 and len(asked_again) <= 3
    # The canaries (hub.test answered) and the 3 names: a few look-ups, once.
    [checks] = re.findall(r"self-check before blocking trap.test: (\d+) look-ups?", worker.log())
    assert 3 <= int(checks) <= 6
    looked_up = set(queries)
    # Once blocked, the rest never reach the resolver; only what was in flight (two claim
    # batches) or claimed while the window's last writes were landing (two more) may.
    assert 50 <= len(looked_up) <= 50 + 4 * 8
    with db.connect() as conn:
        out_of_routing = conn.execute(
            text("SELECT count(*) FROM queue WHERE denied_by = 'trap.test'")
        ).scalar()
    assert out_of_routing >= 300 - len(looked_up)
    assert "'hostcrawl/traps/blocked': 1" in worker.log()


def test_a_root_with_live_subdomains_is_never_blocked(db, fakeweb_factory, crawl):
    world = World()
    names = [f"n{i:03}.wild.test" for i in range(200)]
    world.site("hub.test", links=[f"http://{n}/" for n in names])
    world.zone("wild.test", "nxdomain")
    for name in names[::40]:  # one live name in every 40 (the window orders by completion)
        world.site(name)
    web = fakeweb_factory(world)
    queue.seed(db, ["hub.test"])

    crawl(web, CLAIM_BATCH=4)

    assert deny_entries.list_entries(db, "blocked") == []
    outcomes = Counter(host_facts(db, n).outcome for n in names)
    assert outcomes == {"DNS_NXDOMAIN": 195, "OK": 5}


@pytest.mark.refetches(CANARY_CHECKS)
def test_tcp_and_tls_failures_on_both_schemes_count_towards_a_trap(db, fakeweb_factory, crawl):
    world = World()
    kinds = ["refused", "reset", "tls_broken"]
    names = [f"h{i:02}.mixed.test" for i in range(60)]
    world.site("hub.test", links=[f"https://{n}/" for n in names])
    for i, name in enumerate(names):
        world.host(name, kinds[i % 3])
    web = fakeweb_factory(world)
    queue.seed(db, ["hub.test"])

    worker = crawl(web, scheme="https", CLAIM_BATCH=8, RETRY_TIMES=0)

    [entry] = deny_entries.list_entries(db, "blocked")
    assert entry["hostname"] == "mixed.test"
    # Each failed on https (refused, reset, broken TLS), then on plain HTTP: the final
    # outcome is what the window holds (the fallback's, or the https try's when TLS failed).
    for kind in ("TCP_REFUSED", "TCP_RESET"):
        assert kind in entry["blocked_reason"]
    tried = int(re.search(r"'hostcrawl/fallback/tried': (\d+)", worker.log()).group(1))
    assert tried >= 50 and "'hostcrawl/fallback/answered'" not in worker.log()


@pytest.mark.refetches(REDIRECT_TARGET)
def test_redirects_to_denied_hosts_are_never_followed(db, fakeweb_factory, crawl):
    world = World()
    world.site("hub.test", links=["http://r1.test/", "http://r2.test/", "http://r3.test/"])
    world.redirect("r1.test", "http://www.social.test:{http_port}/")
    world.redirect("r2.test", "http://x.trapped.test:{http_port}/")
    world.redirect("r3.test", "http://fine.test:{http_port}/")
    for name in ("www.social.test", "x.trapped.test", "fine.test"):
        world.site(name)
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(db, ["social.test"])
    deny_entries.upsert_blocked(db, "trapped.test", "test block")
    queue.seed(db, ["hub.test"])

    worker = crawl(web)

    fetched = set(web.fetch_counts(path=None))
    assert fetched == {"hub.test", "r1.test", "r2.test", "r3.test", "fine.test"}
    assert not web.dns_queries("www.social.test") and not web.dns_queries("x.trapped.test")
    r1 = host_facts(db, "r1.test")
    assert (r1.outcome, r1.final_url) == ("OK", f"http://www.social.test:{web.http_port}/")
    assert "fine.test" in known_hosts(db)  # a redirect's target is discovered too
    for stat in (
        "'hostcrawl/blacklist/filtered/no_follow': 1",
        "'hostcrawl/blacklist/filtered/blocked': 1",
        "'hostcrawl/blacklist/domains': 2",
    ):
        assert stat in worker.log()


@pytest.mark.refetches(KILLED)
def test_kill_9_mid_crawl_then_rerun_gives_the_full_result(db, fakeweb_factory, start_crawler):
    world = World(seed=7, delay=0.02)  # waves long enough to be killed inside one
    names = world.graph(200, roots=["alpha.test", "beta.test"])
    web = fakeweb_factory(world)
    queue.seed(db, [names[0]])

    worker = start_crawler(web, CLAIM_LEASE=3, CLAIM_BATCH=8)
    # Killed while it holds claims: between two waves of the crawl it may hold none.
    wait_until(
        lambda: len(web.fetch_counts()) >= 40 and claims_held(db) > 0,
        60,
        "40 pages fetched and claims held",
    )
    worker.kill()
    assert claims_held(db) > 0, "the kill left claimed hosts behind"

    wait_until(lambda: leases_ran_out(db), 60, "the leases to run out")
    start_crawler(web, CLAIM_LEASE=3).wait()

    assert known_hosts(db) == set(names)
    with db.connect() as conn:
        uncrawled = conn.execute(text("SELECT count(*) FROM hosts WHERE outcome IS NULL")).scalar()
        stranded = conn.execute(text("SELECT count(*) FROM queue WHERE claimed_by IS NOT NULL"))
    assert uncrawled == 0 and stranded.scalar() == 0


def test_two_workers_share_a_crawl_without_fetching_twice(db, fakeweb_factory, start_crawler):
    world = World(seed=11)
    names = world.graph(320, roots=[f"r{i:02}.test" for i in range(16)])
    web = fakeweb_factory(world)
    # Each worker's own in-flight limit binds, not the roots' shared one: with the roots'
    # slots all taken, the worker a settling host wakes would claim the freed slot
    # before the other's poll came round, and could crawl everything alone.
    limits = {"MAX_IN_FLIGHT": 8, "ROOT_CONCURRENCY": 64, "CLAIM_POLL_INTERVAL": 0.2}
    workers = [start_crawler(web, CLAIM_BATCH=4, CLOSE_WHEN_DRAINED=0, **limits) for _ in range(2)]
    wait_until(lambda: all("Spider opened" in w.log() for w in workers), 60, "both workers")
    queue.seed(db, [names[0]])

    def all_crawled() -> bool:
        with db.connect() as conn:
            done = text("SELECT count(*) FROM hosts WHERE outcome IS NOT NULL")
            return conn.execute(done).scalar() == len(names)

    wait_until(all_crawled, 120, "every host crawled")
    for worker in workers:
        worker.stop()

    assert known_hosts(db) == set(names)
    counts = web.fetch_counts(path="/")
    assert set(counts) == set(names) and max(counts.values()) == 1
    with db.connect() as conn:
        unsettled = conn.execute(text("SELECT count(*) FROM queue WHERE claimed_by IS NOT NULL"))
        assert unsettled.scalar() == 0
    found = [re.search(r"'hostcrawl/hosts/outcome/OK': (\d+)", w.log()) for w in workers]
    shares = [int(f.group(1)) if f else 0 for f in found]
    assert sum(shares) == len(names) and min(shares) > 0, shares


def test_start_requests_to_denied_hosts_leave_routing(db, fakeweb_factory, crawl):
    world = World()
    world.site("stale.social.test")
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(db, ["social.test"])
    insert_stale_row(db, "stale.social.test", "social.test")  # the claim refuses it
    crawl(web)
    assert not web.fetches(host="stale.social.test", path=None)
