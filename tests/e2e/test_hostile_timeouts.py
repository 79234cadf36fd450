"""Every timeout means what it says: an answer no client can read holds a host no longer
than DOWNLOAD_TIMEOUT (plus a margin), whatever it holds back (tests/fakeweb/garbled.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from crawler.db import queue
from tests.e2e.conftest import assert_within_bounds, wait_until
from tests.fakeweb import World

ORDINARY = [f"ok{i}.test" for i in range(4)]
DOWNLOAD_TIMEOUT = 3
# A bound on the wait, not a duration asserted: the crawl's own work (start-up, claims,
# the ordinary hosts) and DOWNLOAD_TIMEOUT fit in it many times; the 68 s a garbled
# answer held a host before does not.
SETTLED_WITHIN = 40


def garbled_world(kind: str) -> World:
    world = World()
    world.site("hub.test", links=[f"http://{h}/" for h in [*ORDINARY, "garbled.test"]])
    for name in ORDINARY:
        world.site(name)
    world.garble("garbled.test", kind)
    return world


def outcomes(db) -> dict[str, str | None]:
    with db.connect() as conn:
        return dict(conn.execute(text("SELECT hostname, outcome FROM hosts")).all())


@pytest.mark.parametrize(
    ("scheme", "kind", "outcome"),
    [
        # An answer that is no HTTP: the server spoke, so an HTTP failure, not TCP's.
        ("https", "bad_status", "HTTP_ERROR"),
        ("http", "bad_status", "HTTP_ERROR"),
        # A line past the client's limit is as broken, at once: no wait for the server's
        # TLS close_notify until the download timeout (HTTP_TIMEOUT of a server that spoke).
        ("https", "long_line", "HTTP_TOO_LARGE"),
        # A status line that never ends counts against the download timeout.
        ("https", "endless_status", "HTTP_TIMEOUT"),
    ],
)
def test_a_garbled_answer_settles_its_host_within_the_download_timeout(
    db, fakeweb_factory, start_crawler, scheme, kind, outcome
):
    web = fakeweb_factory(garbled_world(kind))
    queue.seed(db, ["hub.test"])
    worker = start_crawler(web, scheme, RETRY_TIMES=0, DOWNLOAD_TIMEOUT=DOWNLOAD_TIMEOUT)
    every = {"hub.test", "garbled.test", *ORDINARY}

    def all_settled():
        found = outcomes(db)
        return set(found) >= every and all(found[name] for name in every)

    wait_until(all_settled, SETTLED_WITHIN, f"every host settled ({kind})")
    worker.wait()  # drained: it closes by itself, its stats dumped
    found = outcomes(db)
    assert found["garbled.test"] == outcome
    assert {name: found[name] for name in ORDINARY} == dict.fromkeys(ORDINARY, "OK")
    fetched = web.fetch_counts(path="/")
    assert all(fetched[name] == 1 for name in [*ORDINARY, "hub.test"])
    assert_within_bounds(db, worker.log())
