"""Every outcome type, from a real crawl of fakeweb: one host per type, one test each."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from tests.conftest import empty_tables
from tests.e2e.conftest import CrawlerProcess, crawl_settings
from tests.fakeweb import FakeWeb, World

# host → (fakeweb behaviour or page status, expected outcome, expected HTTP status)
HTTP_CASES = {
    "ok.test": ("page", "OK", 200),
    "missing.test": (404, "OK", 404),
    "broken.test": (500, "OK", 500),
    "nx.test": ("nxdomain", "DNS_NXDOMAIN", None),
    "servfail.test": ("servfail", "DNS_SERVFAIL", None),
    "refusing.test": ("refused_dns", "DNS_REFUSED", None),
    "empty.test": ("noanswer", "DNS_NOANSWER", None),
    "mute.test": ("silent", "DNS_TIMEOUT", None),
    "closed.test": ("refused", "TCP_REFUSED", None),
    "hangup.test": ("reset", "TCP_RESET", None),
    # Connected, then silence: its robots.txt, asked first, is unreachable (RFC 9309:
    # complete disallow, the page not asked for).
    "stall.test": ("blackhole", "HTTP_ROBOTS_UNREACHABLE", None),
    # Its robots.txt answers (404), its page never does.
    "stallpage.test": ("hang", "HTTP_TIMEOUT", None),
}
HTTPS_CASES = {
    "secure.test": ("page", "OK", 200),
    "badtls.test": ("tls_broken", "TLS_HANDSHAKE", None),
    # A stalled handshake: bounded by CONNECT_TIMEOUT, apart from the download's.
    "stalltls.test": ("blackhole", "TLS_TIMEOUT", None),
    # TCP and TLS done, then silence at HTTP: an answer's timeout, no network failure.
    "hungtls.test": ("hang", "HTTP_TIMEOUT", None),
    # A body that trickles in is bounded by the download timeout as well as by size.
    "drip.test": ("trickle", "HTTP_TIMEOUT", None),
}


def build_world(cases: dict) -> World:
    world = World()
    for host, (how, _, _) in cases.items():
        if how == "page":
            world.site(host)
        elif isinstance(how, int):
            world.site(host, status=how)
        elif how == "hang":  # the page only: its robots.txt answers
            world.hang(host, "/")
        elif how == "trickle":
            world.trickle(world.site(host, title="x" * 400), chunk=16, every=0.2)
        else:
            world.host(host, how)
    return world


@pytest.fixture(scope="module")
def crawled(engine, tmp_path_factory):
    """Crawl every case once (http and https), then return each host's facts."""
    empty_tables(engine)
    db = engine
    logs = tmp_path_factory.mktemp("outcomes")
    for scheme, cases in (("http", HTTP_CASES), ("https", HTTPS_CASES)):
        with FakeWeb(build_world(cases), workdir=logs / scheme) as web:
            queue.seed(db, list(cases))
            # The fallback off: each failure kind as the first scheme meets it.
            settings = crawl_settings(
                web,
                scheme,
                DOWNLOAD_TIMEOUT=2,
                CONNECT_TIMEOUT=1,
                DNS_TIMEOUT=0.5,  # asked twice: within the download timeout
                RETRY_TIMES=0,
                HTTP_FALLBACK_TEMPLATE="",
            )
            CrawlerProcess(settings, logs / f"{scheme}.log").wait()
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT hostname, outcome, http_status FROM hosts"))
        return {r.hostname: (r.outcome, r.http_status) for r in rows}


@pytest.mark.parametrize(
    ("host", "outcome", "status"),
    [(host, outcome, status) for host, (_, outcome, status) in (HTTP_CASES | HTTPS_CASES).items()],
)
def test_outcome(crawled, host, outcome, status):
    assert crawled[host] == (outcome, status)
