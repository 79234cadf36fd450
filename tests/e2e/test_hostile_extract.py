"""Hostile responses that cost the crawler to read (issue 45, items 2-5): a page that made a
pattern backtrack, a flood of names from every source, a page too big to read in its
budget, headers past their bound, a poison pill, a page of registered domains that
do not exist. Each crawl holds ordinary hosts beside
the hostile ones: all of them are crawled (their front page once), and the hostile
one gets an outcome within its bounds."""

from __future__ import annotations

from sqlalchemy import text

from crawler.db.crawl import queue
from tests.e2e.conftest import NAMES_CAP, assert_within_bounds, host_facts
from tests.fakeweb import World

ORDINARY = [f"plain{i}.test" for i in range(8)]


def world_with_ordinary_hosts() -> World:
    world = World()
    for name in ORDINARY:
        world.site(name)
    return world


def crawl_beside_ordinary(db, fakeweb_factory, crawl, world: World, hostile: list[str], **settings):
    """Seed the ordinary and the hostile hosts, crawl until drained; (web, worker)."""
    web = fakeweb_factory(world)
    queue.seed(db, ORDINARY + hostile)
    worker = crawl(web, RETRY_TIMES=0, **settings)
    return web, worker


def assert_crawled_within_bounds(db, web, worker, names_cap: int = NAMES_CAP) -> None:
    """Every ordinary host crawled (its front page once), and the crawl's bounds: names
    saved per fetch, the worker's peak RSS."""
    fetched = web.fetch_counts(path="/")
    for name in ORDINARY:
        assert host_facts(db, name).outcome == "OK", name
        assert fetched[name] <= 1, name
    assert_within_bounds(db, worker.log(), names_cap)


def found_on(db, page: str) -> list[str]:
    with db.connect() as conn:
        sql = "SELECT hostname FROM hosts WHERE discovered_from = :page"
        return list(conn.execute(text(sql), {"page": page}).scalars())


def test_patterns_that_backtracked_read_hostile_css_and_link_headers_at_once(
    db, fakeweb_factory, crawl
):
    world = world_with_ordinary_hosts()
    # 1.9 MB of `url(` never closed: the unquoted branch once read on to the end from
    # every one of them (the worker froze for hours).
    style = "url(https://before-css.test/) " + "url(" * 475_000
    world.raw("css.test", f"<html><style>{style}</style></html>".encode())
    # Link lines of 15 KB of `<` (under Twisted's line limit, 225 KB of head in all).
    links = ["<https://before-link.test/>"] + ["<" * 15_000 for _ in range(15)]
    world.raw("link.test", b"<html></html>", headers={"Link": links})
    hostile = ["css.test", "link.test"]
    web, worker = crawl_beside_ordinary(db, fakeweb_factory, crawl, world, hostile)
    assert_crawled_within_bounds(db, web, worker)
    for name in hostile:  # read whole, at once: no budget spent
        assert (host_facts(db, name).outcome, host_facts(db, name).extract_stopped) == ("OK", None)
    assert found_on(db, "css.test") == ["before-css.test"]
    assert found_on(db, "link.test") == ["before-link.test"]


def flood_world() -> World:
    """flood.test redirects / to /page; the hop's body, the page, its Link header and a
    wildcard root's subdomains name far more hosts than one fetch may save."""
    world = world_with_ordinary_hosts()
    hop_body = "".join(f'<a href="http://hop{i}.test/">h</a>' for i in range(100))
    world.redirect("flood.test", "/page", status=302, body=hop_body)
    page = "".join(f'<img src="http://s{i}.wild.test/i.png">' for i in range(60))
    page += "".join(f'<a href="http://name{i}.test/">n</a>' for i in range(400))
    link = ", ".join(f"<https://link{i}.test/>" for i in range(100))
    world.raw("flood.test", page.encode(), path="/page", headers={"Link": link})
    return world


def test_one_fetch_saves_at_most_its_caps_of_names_from_every_source(db, fakeweb_factory, crawl):
    web, worker = crawl_beside_ordinary(
        db,
        fakeweb_factory,
        crawl,
        flood_world(),
        ["flood.test"],
        MAX_NAMES_PER_PAGE=120,
        MAX_NAMES_PER_ROOT_PER_PAGE=20,
    )
    assert_crawled_within_bounds(db, web, worker, names_cap=120)
    facts = host_facts(db, "flood.test")
    assert facts.outcome == "OK"
    saved = found_on(db, "flood.test")
    assert len(saved) == 120 == facts.links_saved
    # The hop is read first: its 100 names fit; then the page's wildcard root fills its
    # own cap, and nothing more fits.
    assert len([n for n in saved if n.startswith("hop")]) == 100
    assert len([n for n in saved if n.endswith(".wild.test")]) == 20
    assert facts.links_over_cap == 100 + 400 + 60 + 100 - 120
    assert "'hostcrawl/links/dropped/over_cap': 540" in worker.log()


def test_a_page_too_big_to_read_in_its_budget_is_read_in_part_and_settles(
    db, fakeweb_factory, crawl
):
    world = world_with_ordinary_hosts()
    page = "".join(f'<a href="http://n{i}.big.test/">n</a>' for i in range(30_000))
    world.raw("big.test", f"<html>{page}</html>".encode())
    web, worker = crawl_beside_ordinary(
        db, fakeweb_factory, crawl, world, ["big.test"], MAX_EXTRACT_SECONDS=0.001
    )
    assert_crawled_within_bounds(db, web, worker)
    facts = host_facts(db, "big.test")
    assert facts.outcome == "OK"
    assert facts.extract_stopped == "budget_spent"
    assert facts.links_found < 30_000
    assert "'hostcrawl/extract/stopped/budget_spent': 1" in worker.log()


def test_headers_past_their_bound_are_too_large(db, fakeweb_factory, crawl):
    world = world_with_ordinary_hosts()
    lines = [f"<https://h{i}.test/{'x' * 9_000}>" for i in range(40)]  # 360 KB of head
    world.raw("heads.test", b"<html></html>", headers={"Link": lines})
    web, worker = crawl_beside_ordinary(db, fakeweb_factory, crawl, world, ["heads.test"])
    assert_crawled_within_bounds(db, web, worker)
    assert host_facts(db, "heads.test").outcome == "HTTP_TOO_LARGE"
    assert found_on(db, "heads.test") == []


def test_a_host_whose_leases_ran_out_twice_in_flight_is_put_off_unfetched(
    db, fakeweb_factory, crawl
):
    world = world_with_ordinary_hosts()
    world.site("pill.test")
    web = fakeweb_factory(world)
    queue.seed(db, [*ORDINARY, "pill.test"])
    with db.begin() as conn:  # two workers froze on it until their leases ran out
        conn.execute(text("UPDATE hosts SET unfinished_claims = 2 WHERE hostname = 'pill.test'"))
    worker = crawl(web)
    assert_crawled_within_bounds(db, web, worker)
    facts = host_facts(db, "pill.test")
    assert facts.outcome == "HTTP_UNFINISHED"
    assert web.fetch_counts(path="/")["pill.test"] == 0
    assert facts.unfinished_claims == 0 and facts.claimed_by is None
    with db.connect() as conn:
        put_off = "SELECT next_claim_at > now() + interval '1 day' FROM queue WHERE hostname = :h"
        assert conn.execute(text(put_off), {"h": "pill.test"}).scalar()
    assert "'hostcrawl/hosts/unfinished': 1" in worker.log()


def test_a_page_whose_new_registered_domains_all_fail_at_dns_is_named(db, fakeweb_factory, crawl):
    world = world_with_ordinary_hosts()
    gone = [f"gone{i}.test" for i in range(60)]  # no DNS rule: NXDOMAIN
    world.site("namer.test", links=[f"http://{name}/" for name in gone])
    web, worker = crawl_beside_ordinary(db, fakeweb_factory, crawl, world, ["namer.test"])
    assert_crawled_within_bounds(db, web, worker)
    assert host_facts(db, "namer.test").outcome == "OK"
    assert all(host_facts(db, name).outcome == "DNS_NXDOMAIN" for name in gone)
    log = worker.log()
    assert "name flood: the last 50 new registered domains that namer.test named" in log
    assert "'hostcrawl/floods/pages': 1" in log
    assert host_facts(db, "namer.test").name_flood.startswith("name flood: the last 50")
