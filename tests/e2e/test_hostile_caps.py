"""A response over a cap is an answer: it settles its host at the first response, with no
retry (issue 51, item 3). Header floods past MAX_HEADER_BYTES, a header line or a redirect
URL past the HTTP client's line limit, a status line that is no status line: each host is
asked once, at the crawl's own RETRY_TIMES (the production one), and its outcome says what
it sent."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import text

from crawler.db import queue
from tests.e2e.conftest import assert_within_bounds
from tests.fakeweb import World
from tests.fakeweb.hostile import csp_hosts, link_lines

ORDINARY = [f"ok{i}.test" for i in range(4)]
LONG_URL = "http://ok0.test:{http_port}/?q=" + "x" * 1_000_000
# host -> its outcome
OVER_A_CAP = {
    # 20,000 Link lines (680 KB of head): past MAX_HEADER_BYTES (256 KiB).
    "linkflood.test": "HTTP_TOO_LARGE",
    # One Content-Security-Policy line of 30,000 hosts (360 KB).
    "cspflood.test": "HTTP_TOO_LARGE",
    # One header line of 2 MB that never ends.
    "longline.test": "HTTP_TOO_LARGE",
    # A Location of 1 MB.
    "longredirect.test": "HTTP_TOO_LARGE",
    # A status line that is no status line: the server answered, what is no HTTP.
    "badstatus.test": "HTTP_ERROR",
}


def caps_world() -> World:
    world = World()
    world.site("hub.test", links=[f"http://{h}/" for h in [*ORDINARY, *OVER_A_CAP]])
    for name in ORDINARY:
        world.site(name)
    link_lines(20_000)(world, "linkflood.test", "lf")
    csp_hosts(world, "cspflood.test", "cf", count=30_000)
    world.garble("longline.test", "long_line")
    world.redirect("longredirect.test", LONG_URL)
    world.garble("badstatus.test", "bad_status")
    return world


def requests_by_host_and_method(web) -> Counter:
    return Counter((r["host"], r["method"], r["path"]) for r in web.requests())


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_response_over_a_cap_settles_at_the_first_response(db, fakeweb_factory, crawl, scheme):
    web = fakeweb_factory(caps_world())
    queue.seed(db, ["hub.test"])
    worker = crawl(web, scheme)  # the crawl's own RETRY_TIMES (1): a retry would show

    with db.connect() as conn:
        found = dict(conn.execute(text("SELECT hostname, outcome FROM hosts")).all())
    assert {name: found[name] for name in OVER_A_CAP} == OVER_A_CAP
    assert {name: found[name] for name in ORDINARY} == dict.fromkeys(ORDINARY, "OK")
    asked = requests_by_host_and_method(web)
    for name in [*OVER_A_CAP, *ORDINARY, "hub.test"]:
        assert asked[name, "GET", "/"] == 1, f"{name} asked {asked[name, 'GET', '/']} times"
    assert not [key for key, count in asked.items() if count > 1]
    log = worker.log()
    assert "Gave up retrying" not in log and "Retrying" not in log
    assert_within_bounds(db, log)
