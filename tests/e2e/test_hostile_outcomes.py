"""Each lie of the web gets the outcome of what happened (issue 51, item 4), on both
deployments: a redirect loop seen at its first repeat, a chain of redirects past
REDIRECT_MAX_TIMES, a status that is no HTTP status, a certificate the TLS library will not
read, a CNAME chain answered in one datagram, a robots.txt that hangs or fails.

Each test counts the requests each host got, per method and path (every host once, or the
test says why), and checks the outcome's name.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from tests.e2e.conftest import REDIRECT_TARGET
from tests.fakeweb import World
from tests.fakeweb.hostile import certificate_names

ORDINARY = ["plain0.test", "plain1.test"]
WORLD_CHECK = "a failure below HTTP: the check that the world answers may ask an ordinary host"
ONCE = {"GET /robots.txt": 1, "GET /": 1}
# Labels of 63 characters: each CNAME of the chain is 200 bytes that compression cannot
# share, and the answer of 45 of them (9 KB) is past the 8 KB twisted.names read of a
# UDP datagram by default.
CHAIN = [f"{'c' * 60}{i:03}.{'d' * 60}{i:03}.{'e' * 60}{i:03}.chain.test" for i in range(45)]


def world_of(build) -> World:
    world = World()
    for name in ORDINARY:
        world.site(name)
    build(world)
    return world


def requests_by_host(web) -> dict[str, Counter]:
    """host -> Counter of "METHOD path" of every request it got (any scheme)."""
    asked: dict[str, Counter] = {}
    for request in web.requests():
        asked.setdefault(request["host"], Counter())[f"{request['method']} {request['path']}"] += 1
    return asked


def settled(db, web, hosts: list[str], fresh, checked: bool = False, **settings) -> dict:
    """Crawl `hosts` beside the ordinary ones; each host's row (the ordinary ones OK, once;
    `checked`: besides, any HEAD / of the check that the world answers us, which issue 51's
    item 1 bounds, not this)."""
    queue.seed(db, [*ORDINARY, *hosts])
    fresh(web, **{"RETRY_TIMES": 0, **settings})
    with db.connect() as conn:
        sql = "SELECT hostname, outcome, http_status, final_url, scheme FROM hosts"
        rows = {row.hostname: row for row in conn.execute(text(sql))}
    assert {name: rows[name].outcome for name in ORDINARY} == dict.fromkeys(ORDINARY, "OK")
    asked = requests_by_host(web)
    for name in ORDINARY if checked else ():
        asked[name].pop("HEAD /", None)
    assert {name: asked[name] for name in ORDINARY} == dict.fromkeys(ORDINARY, Counter(ONCE))
    return rows


def test_a_host_that_redirects_to_itself_is_a_loop_at_its_first_repeat(db, fakeweb_factory, crawl):
    web = fakeweb_factory(
        world_of(lambda w: w.redirect("self.test", "http://self.test:{http_port}/"))
    )
    rows = settled(db, web, ["self.test"], crawl)
    assert rows["self.test"].outcome == "HTTP_REDIRECT_LOOP"
    assert requests_by_host(web)["self.test"] == Counter(ONCE)  # not 6 times


@pytest.mark.refetches(REDIRECT_TARGET)
def test_two_hosts_that_redirect_to_each_other_are_each_a_loop(db, fakeweb_factory, crawl):
    def build(world: World) -> None:
        world.redirect("ping.test", "http://pong.test:{http_port}/")
        world.redirect("pong.test", "http://ping.test:{http_port}/")

    web = fakeweb_factory(world_of(build))
    rows = settled(db, web, ["ping.test", "pong.test"], crawl)
    assert rows["ping.test"].outcome == rows["pong.test"].outcome == "HTTP_REDIRECT_LOOP"
    asked = requests_by_host(web)
    # Each front page once as its own host, once as the other's hop (not 6 times each).
    expected = Counter({"GET /robots.txt": 1, "GET /": 2})
    assert {name: asked[name] for name in ("ping.test", "pong.test")} == {
        "ping.test": expected,
        "pong.test": expected,
    }


def test_a_chain_past_the_hop_limit_is_too_many_redirects(db, fakeweb_factory, crawl):
    def build(world: World) -> None:
        for hop in range(7):
            world.redirect("hops.test", f"/{hop + 1}", path="/" if hop == 0 else f"/{hop}")

    web = fakeweb_factory(world_of(build))
    rows = settled(db, web, ["hops.test"], crawl)
    assert rows["hops.test"].outcome == "HTTP_TOO_MANY_REDIRECTS"
    # REDIRECT_MAX_TIMES (5) hops followed, each asked once; the sixth is not asked.
    hops = {f"GET /{hop}": 1 for hop in range(1, 6)}
    assert requests_by_host(web)["hops.test"] == Counter({**ONCE, **hops})


def test_a_status_that_is_no_http_status_is_named_so(db, fakeweb_factory, crawl):
    web = fakeweb_factory(world_of(lambda w: w.raw("odd.test", b"<title>x</title>", status=99999)))
    rows = settled(db, web, ["odd.test"], crawl)
    assert rows["odd.test"].outcome == "HTTP_BAD_STATUS"
    assert requests_by_host(web)["odd.test"] == Counter(ONCE)


@pytest.mark.refetches(WORLD_CHECK)
def test_a_certificate_the_tls_library_refuses_is_a_tls_outcome(db, fakeweb_factory, crawl):
    """10,000 names are past OpenSSL's 100 KB chain: the handshake fails on the
    certificate. Plain HTTP, the fallback, is closed there: the host's outcome is still
    what failed on https, not the fallback's closed port. A failure at TLS is one the
    world check may ask an ordinary host about (HEAD /: issue 51's item 1 is about it)."""
    web = fakeweb_factory(world_of(lambda w: certificate_names(10_000)(w, "bigcert.test", "bc")))
    closed = "http://{hostname}:1/"  # nothing listens on port 1
    rows = settled(
        db, web, ["bigcert.test"], crawl, True, scheme="https", HTTP_FALLBACK_TEMPLATE=closed
    )
    assert rows["bigcert.test"].outcome == "TLS_CERTIFICATE"
    assert "bigcert.test" not in requests_by_host(web)  # no HTTP request got through


def test_a_cname_chain_answered_in_one_datagram_resolves(db, fakeweb_factory, crawl):
    def build(world: World) -> None:
        world.site("final.test")
        world.cname_chain("chain.test", CHAIN, "final.test")
        world.host("final.test")  # its name resolves; its page is chain.test's

    web = fakeweb_factory(world_of(build))
    # The chain's names are left unsaved: they are not what this test is about.
    rows = settled(db, web, ["chain.test"], crawl, DISCOVERY_SOURCES="links")
    assert rows["chain.test"].outcome == "OK"
    assert requests_by_host(web)["chain.test"] == Counter(ONCE)
    # Answered over UDP once, and read: not asked again as if the server were silent.
    assert [q["proto"] for q in web.dns_queries("chain.test", "A")] == ["udp"]


@pytest.mark.parametrize("robots", ["hangs", "fails"])
def test_an_unreachable_robots_txt_disallows_the_host_and_says_so(
    db, fakeweb_factory, crawl, robots
):
    """RFC 9309 §2.3.1.4: a robots.txt unreachable by server or network errors means
    complete disallow. The page is not asked for; the host is tried again after
    ROBOTS_UNREACHABLE_RETRY_AFTER, sooner than RECRAWL_AFTER."""

    def build(world: World) -> None:
        world.site("closed.test")
        if robots == "hangs":
            world.hang("closed.test", "/robots.txt")
        else:
            world.page("closed.test", "/robots.txt", status=503)

    web = fakeweb_factory(world_of(build))
    # Production's RETRY_TIMES: robots.txt's 503 is an answer, not retried.
    rows = settled(db, web, ["closed.test"], crawl, RETRY_TIMES=1)
    assert rows["closed.test"].outcome == "HTTP_ROBOTS_UNREACHABLE"
    assert rows["closed.test"].final_url.endswith("/robots.txt")
    assert requests_by_host(web)["closed.test"] == Counter({"GET /robots.txt": 1})
    with db.connect() as conn:
        sql = "SELECT hostname, next_claim_at - now() AS due_in FROM queue"
        due_in = {row.hostname: row.due_in for row in conn.execute(text(sql))}
    assert timedelta(hours=23) < due_in["closed.test"] <= timedelta(days=1)
    assert due_in["plain0.test"] > timedelta(days=6)


def test_a_name_that_does_not_resolve_keeps_its_page_url(db, fakeweb_factory, crawl):
    """Its robots.txt, asked first, failed at DNS and the page settled with that failure:
    the name failed, not robots.txt, so the host's final URL is its page's (issue 53)."""
    web = fakeweb_factory(world_of(lambda w: w.host("gone.test", "nxdomain")))
    rows = settled(db, web, ["gone.test"], crawl)
    assert rows["gone.test"].outcome == "DNS_NXDOMAIN"
    assert rows["gone.test"].final_url == web.url_template("http").format(hostname="gone.test")
