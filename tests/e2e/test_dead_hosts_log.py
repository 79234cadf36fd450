"""A dead host is the web's answer, not our error (issue 51, item 6).

Hosts that refuse, reset, do not exist or never answer are crawled beside ordinary ones,
at the crawl's own RETRY_TIMES and with the https -> http fallback. The log has no ERROR
line for them (Scrapy's "Gave up retrying" was one per host); a line at INFO counts the
web's answers by outcome, once a minute and as the crawl closes.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from sqlalchemy import text

from crawler.db import queue
from tests.fakeweb import World

ORDINARY = [f"ok{i}.test" for i in range(4)]
# host -> (its behaviour, its outcome)
DEAD = {
    "refused.test": ("refused", "TCP_REFUSED"),
    "reset.test": ("reset", "TCP_RESET"),
    "gone.test": ("nxdomain", "DNS_NXDOMAIN"),
    "hole.test": ("blackhole", "HTTP_TIMEOUT"),
}


def dead_world() -> World:
    world = World()
    world.site("hub.test", links=[f"http://{h}/" for h in [*ORDINARY, *DEAD]])
    for name in ORDINARY:
        world.site(name)
    for name, (behaviour, _) in DEAD.items():
        world.host(name, behaviour)
    return world


def told_answers(log: str) -> Counter:
    """The web's answers the crawl's INFO lines counted, summed over its lines."""
    counted: Counter = Counter()
    for line in re.findall(r"INFO: the web's answers in the last \d+ s: (.*) \(each host", log):
        for count, outcome in re.findall(r"(\d+) ([A-Z_]+)", line):
            counted[outcome] += int(count)
    return counted


# Why the ordinary hosts get a HEAD besides their GET.
CANARY_HEADS = (
    "a host failing below HTTP has the world check ask a canary's front page (HEAD): issue"
    " 51 item 1 is about those; the GETs are counted here, once per host"
)


@pytest.mark.refetches(CANARY_HEADS)
def test_dead_hosts_are_counted_at_info_and_never_an_error(db, fakeweb_factory, crawl):
    web = fakeweb_factory(dead_world())
    queue.seed(db, ["hub.test"])
    worker = crawl(web, "https")  # the crawl's own RETRY_TIMES (1), and the http fallback

    with db.connect() as conn:
        found = dict(conn.execute(text("SELECT hostname, outcome FROM hosts")).all())
    assert {name: found[name] for name in DEAD} == {n: o for n, (_, o) in DEAD.items()}
    assert {name: found[name] for name in ORDINARY} == dict.fromkeys(ORDINARY, "OK")
    log = worker.log()
    assert not re.findall(r"\] ERROR: .*", log), re.findall(r"\] ERROR: .*", log)[:3]
    assert "Gave up retrying" not in log  # at DEBUG now: the crawl logs at INFO
    counted = told_answers(log)
    for outcome in ("TCP_REFUSED", "TCP_RESET", "DNS_NXDOMAIN", "HTTP_TIMEOUT"):
        assert counted[outcome] >= 1, (outcome, counted)
    # Per host and method: the ordinary hosts' pages once each.
    pages = Counter((r["host"], r["method"]) for r in web.requests() if r["path"] == "/")
    assert {name: pages[name, "GET"] for name in [*ORDINARY, "hub.test"]} == dict.fromkeys(
        [*ORDINARY, "hub.test"], 1
    )
    assert not [key for key, count in pages.items() if count > 1]
    # The dead hosts' connections: a reset is a glitch as far as one try can tell, so its
    # robots.txt is tried again once (RETRY_TIMES) over each scheme, and the page fails as
    # its robots.txt did, without a connection of its own; the host that never answers
    # waited out its timeout once (HTTP_TIMEOUT has no retry nor fallback).
    connections = Counter((c["behaviour"], c["scheme"]) for c in web.connections())
    assert connections == {("reset", "https"): 2, ("reset", "http"): 2, ("blackhole", "https"): 1}
