"""A flood of names beside ordinary hosts (issue 51, item 5, "Floods paced").

Each flood case of tests/fakeweb/hostile.py (a 2 MB page of registered domains, its
robots.txt's 2 MB of `Sitemap:` lines, a certificate of 6,500 names, five redirect hops
of 2 MB each, 200 KB of Link header lines) is crawled beside ordinary hosts. The heavy
responses are read off the event loop, in the reader process (crawler/network/reader.py:
the stat hostcrawl/extract/off_loop counts them), each once; every
ordinary host is asked for its robots.txt and its page once each, with GET, and is OK;
the flooding host is OK, its fetch saved its cap of names, and each of them settled
as the DNS answered (NXDOMAIN) without a request. How fast the ordinary hosts are
beside a flood is bench/hostile_crawl.py's figure, not a test's.
"""

from __future__ import annotations

from collections import Counter

import pytest

from crawler.db.crawl import queue
from tests.e2e.conftest import host_facts
from tests.e2e.test_hostile_extract import ORDINARY, found_on, world_with_ordinary_hosts
from tests.fakeweb.hostile import HOSTILE

FLOOD = "flood.test"
# Each case, and the responses of its fetch read off the loop: the page, each hop, robots.txt.
FLOODS = {
    "2 MiB page of registered domains": 1,
    "robots.txt of 2 MiB of Sitemap lines": 2,  # the robots.txt, and the page its Sitemaps fill
    "certificate of 6,500 names": 1,
    "5 redirect hops, 2 MiB of names each": 5,
    "200 KB of Link header lines": 1,
}
NAMES_CAP = 60  # MAX_NAMES_PER_PAGE here: the crawl drains the saved names too
# The flooding host's requests: robots.txt and its page, or each redirect hop.
FLOOD_PATHS = {"5 redirect hops, 2 MiB of names each": ["/", "/1", "/2", "/3", "/4", "/5"]}


def requests_by_host(web) -> dict[str, Counter]:
    """host -> Counter of (method, path) of the requests the web saw."""
    asked: dict[str, Counter] = {}
    for request in web.requests():
        asked.setdefault(request["host"], Counter())[(request["method"], request["path"])] += 1
    return asked


@pytest.mark.parametrize("case", FLOODS)
def test_ordinary_hosts_beside_a_flood_are_each_asked_once_and_ok(db, fakeweb_factory, crawl, case):
    world = world_with_ordinary_hosts()
    flood = HOSTILE[case]
    flood.build(world, FLOOD, "fx")
    web = fakeweb_factory(world)
    queue.seed(db, [*ORDINARY, FLOOD])
    worker = crawl(
        web,
        flood.scheme,
        RETRY_TIMES=0,
        MAX_NAMES_PER_PAGE=NAMES_CAP,
        # Five hops of 2 MB read by a busy worker: more than the e2e crawls' 3 s.
        DOWNLOAD_TIMEOUT=15,
    )
    asked = requests_by_host(web)
    once = Counter({("GET", "/robots.txt"): 1, ("GET", "/"): 1})
    for name in ORDINARY:
        assert asked[name] == once, name
        assert host_facts(db, name).outcome == "OK", name
    paths = ["/robots.txt", *FLOOD_PATHS.get(case, ["/"])]
    assert asked[FLOOD] == Counter({("GET", path): 1 for path in paths})
    assert host_facts(db, FLOOD).outcome == "OK"
    names = found_on(db, FLOOD)
    assert len(names) == NAMES_CAP
    assert {host_facts(db, name).outcome for name in names} == {"DNS_NXDOMAIN"}
    assert not set(names) & set(asked), "a name of the flood reached the web"
    log = worker.log()
    assert f"'hostcrawl/extract/off_loop': {FLOODS[case]}," in log
    assert "Traceback" not in log
