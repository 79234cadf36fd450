"""No server hammered, whatever the rules do mid-crawl: a trap filling its window while a
crawl runs costs no host a second request (pages, robots.txt and the checks before a
block alike), and every request says who we are."""

from __future__ import annotations

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from crawler.settings import USER_AGENT
from tests.e2e.conftest import known_hosts
from tests.fakeweb import World

ROOTS = [f"d{i}.test" for i in range(6)]
TRAP_NAMES = [f"http://j{i:02}.trap.test/" for i in range(60)]
NO_FOLLOW_LINKS = ["http://social.test/", "https://www.social.test/me"]


def world_of_120_hosts_a_trap_and_a_platform() -> tuple[World, list[str]]:
    world = World(seed=42)
    names = world.graph(120, roots=ROOTS)
    world.zone("trap.test", "nxdomain")
    world.site("social.test")
    world.site("www.social.test")
    # Two pages of the graph also link the trap's junk names and the platform.
    for name, extra in ((names[7], TRAP_NAMES), (names[30], NO_FOLLOW_LINKS)):
        page = world.pages[name]["/"]
        world.page(name, "/", page["title"], [*page["links"], *extra])
    return world, names


def test_a_trap_blocked_mid_crawl_costs_no_host_a_second_request(db, fakeweb_factory, crawl):
    world, names = world_of_120_hosts_a_trap_and_a_platform()
    web = fakeweb_factory(world)  # its teardown checks each (host, path) was asked once
    deny_entries.add_no_follow(db, ["social.test"], note="giant platform")
    queue.seed(db, [names[0]])

    crawl(web, CLAIM_BATCH=8)

    [entry] = deny_entries.list_entries(db, "blocked")
    assert entry["hostname"] == "trap.test" and "DNS_NXDOMAIN 50" in entry["blocked_reason"]
    counts = web.fetch_counts(path="/", method=None)
    assert set(counts) == set(names) and max(counts.values()) == 1  # once, any method
    agents = {request["user_agent"] for request in web.requests()}
    assert agents == {USER_AGENT}  # every request, checks included, says who we are
    saved = known_hosts(db)
    assert set(names) <= saved
    assert not {h for h in saved if h.endswith(".social.test")}
    assert not {r["host"] for r in web.requests() if r["host"].endswith("social.test")}
