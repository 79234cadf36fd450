"""Only the world's silence is our outage (issue 51, item 1).

A real `scrapy crawl hosts` against fakeweb, on both deployments. Each test counts the
requests fakeweb saw per host, method and path: every host once, no HEAD.

- One failure in a fresh database is the host's own: a redirect to an internal address
  (our own refusal, ADDRESS_REFUSED), a certificate too large to read, an unreadable
  DNS answer, a host that resets. The ordinary hosts beside it answer a second later,
  so it fails before any host has answered in this database. No outage is told, nothing
  is held back, and no host is asked twice or with a HEAD.
- An outage that ends (our resolver silent, then back): each host held back in it is
  asked again once, when it ends (not on a timer), and the crawl, run with
  CLOSE_WHEN_DRAINED, waits for them, whatever their rows' dates say meanwhile (a lease
  that ran out, a date past the lease).
- A network outage ends on a connection made afresh: a page answered over a connection
  made before it proves nothing, and no host held back is given back (and settled by its
  next failure) before the network answers again.
"""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from tests.e2e.conftest import CRAWL_TIMEOUT as CRAWL_BOUND
from tests.e2e.conftest import host_facts, known_hosts, wait_until
from tests.fakeweb import ADDRESSES, World

ORDINARY = [f"plain{i}.test" for i in range(8)]
SLOW = 1.0  # seconds each ordinary host takes to answer: the hostile one fails first
STARTED = "the world is not answering us"
ENDED = "the world answers again"


def requests_per_host(web) -> Counter:
    """(host, method, path) -> how many times fakeweb was asked it."""
    return Counter((r["host"], r["method"], r["path"]) for r in web.requests())


def held_tries(db) -> dict[str, int]:
    with db.connect() as conn:
        rows = conn.execute(text("SELECT hostname, held_tries FROM hosts WHERE held_tries > 0"))
        return dict(rows.all())


def redirect_inside(world: World) -> str:
    return world.redirect("redir.ssrf.test", f"http://{ADDRESSES['internal']}:{{http_port}}/")


def certificate_too_large(world: World) -> str:
    # 10,000 names: past the 100 KB chain OpenSSL's client reads (tests/fakeweb/hostile.py).
    world.site("bigcert.test")
    return world.certify_host("bigcert.test", [f"c{i}.bigcert.test" for i in range(10_000)])


def unreadable_dns_answer(world: World) -> str:
    return world.cname("oddcname.test", "bad\\255label.test")


def resets(world: World) -> str:
    return world.host("reset.test", "reset")


# case -> (how the hostile host is made, its outcome, the crawl's own settings)
CASES = {
    "redirect_inside": (redirect_inside, "ADDRESS_REFUSED", {}),
    "certificate_too_large": (
        certificate_too_large,
        "TLS_CERTIFICATE",
        {"scheme": "https", "HTTP_FALLBACK_TEMPLATE": ""},
    ),
    "unreadable_dns_answer": (unreadable_dns_answer, "DNS_ERROR", {}),
    "resets": (resets, "TCP_RESET", {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_failure_in_a_fresh_database_is_the_hosts_own(db, fakeweb_factory, crawl, case):
    make, outcome, settings = CASES[case]
    world = World()
    for name in ORDINARY:
        world.site(name)
        world.answer_after(name, SLOW)
    hostile = make(world)
    web = fakeweb_factory(world)
    queue.seed(db, [hostile, *ORDINARY])

    worker = crawl(web, RETRY_TIMES=0, **settings)

    assert host_facts(db, hostile).outcome == outcome
    assert all(host_facts(db, name).outcome == "OK" for name in ORDINARY)
    log = worker.log()
    assert STARTED not in log, log[log.find(STARTED) - 200 :][:1500]
    assert held_tries(db) == {}  # nothing held back
    asked = requests_per_host(web)
    assert not [key for key in asked if key[1] == "HEAD"], asked  # no probe of anyone
    assert all(asked[name, "GET", "/"] == 1 for name in ORDINARY), asked
    assert asked[hostile, "GET", "/"] == (1 if case == "redirect_inside" else 0), asked
    assert max(asked.values()) == 1, asked


def date_rows(db, names: list[str], when: str) -> None:
    with db.begin() as conn:
        dated = text(f"UPDATE hosts SET next_claim_at = {when} WHERE hostname = ANY(:n)")
        conn.execute(dated, {"n": names})


def claimed_within_a_lease(db, names: list[str], lease: int) -> bool:
    """Every one of `names` claimed, due again within `lease` seconds from now."""
    sql = (
        "SELECT count(*) FROM queue WHERE hostname = ANY(:n) AND claimed_by IS NOT NULL"
        " AND next_claim_at > now() AND next_claim_at <= now() + make_interval(secs => :s)"
    )
    with db.connect() as conn:
        return conn.execute(text(sql), {"n": names, "s": lease}).scalar() == len(names)


SILENT_ROOTS = [f"r{i}.test" for i in range(4)]  # several roots: an outage even unproven
HELD = [f"h{j}.{r}" for r in SILENT_ROOTS for j in range(3)]


def test_hosts_held_back_in_an_outage_are_asked_again_once_when_it_ends(
    db, fakeweb_factory, start_crawler
):
    world = World()
    world.site("canary.test")
    for name in HELD:
        world.site(name)
    web = fakeweb_factory(world)
    web.set_dns_silent(True)  # our resolver is silent: each host fails and is held back
    queue.seed(db, HELD)
    worker = start_crawler(
        web,
        CANARY_HOSTS="canary.test",  # asked by DNS: no HTTP request
        ROOT_CONCURRENCY=len(HELD),
        RETRY_TIMES=0,
        # The outage outlasts a lease, and its watch asks the canary every 9 s: a timer
        # (OUTAGE_RETRY_AFTER, before) tried each host held back again every 9 s, and
        # a draining crawl, seeing no claim within its lease, stopped without them.
        CLAIM_LEASE=8,
        OUTAGE_RETRY_AFTER=9,
    )

    def every_host_held_back() -> bool:
        return set(held_tries(db)) == set(HELD) and STARTED in worker.log()

    wait_until(every_host_held_back, 90, "every host to be held back in the outage")
    # Leases that ran out, and dates past the lease (a renewal late, or a now() read in
    # another snapshot): the crawl waits for every host held back all the same, and asks
    # none of them again on that timer.
    date_rows(db, HELD[::2], "now() - interval '1 minute'")
    date_rows(db, HELD[1::2], "now() + interval '1 hour'")
    wait_until(
        lambda: claimed_within_a_lease(db, HELD, 8) or worker.proc.poll() is not None,
        90,
        "the worker to hold every host again, within its lease",
    )
    checks = len(web.dns_queries("canary.test"))
    wait_until(
        lambda: len(web.dns_queries("canary.test")) >= checks + 2 or worker.proc.poll() is not None,
        90,
        "two more checks of the canary: the outage outlasts a lease and a watch",
    )
    assert worker.proc.poll() is None, "the crawl stopped with hosts held back"
    assert not [name for name in HELD if host_facts(db, name).outcome is not None]
    web.set_dns_silent(False)
    worker.wait()  # CLOSE_WHEN_DRAINED: it waits for the hosts held back

    log = worker.log()
    assert log.count(STARTED) == 1 and log.count(ENDED) == 1
    assert log.index(ENDED) < log.index("nothing due and nothing in flight: drained")
    assert known_hosts(db) == set(HELD)
    assert all(host_facts(db, name).outcome == "OK" for name in HELD)
    # Held back once, asked again once: no timer tried them again while the world was silent.
    assert held_tries(db) == dict.fromkeys(HELD, 1)
    asked = requests_per_host(web)
    assert all(asked[name, "GET", "/"] == 1 for name in HELD), asked
    assert not [key for key in asked if key[1] == "HEAD"], asked  # the canary is asked by DNS
    assert max(asked.values()) == 1, asked


KEPT = "kept.alive.test"  # its page answers over a connection made before the outage
CUT = [f"h{j}.n{r}.test" for r in range(3) for j in range(2)]
DRAINED = "nothing due and nothing in flight: drained"


def test_a_network_outage_ends_on_a_new_connection_not_an_answer_over_an_old_one(
    db, fakeweb_factory, start_crawler
):
    world = World()
    world.site("canary.test")
    world.site(KEPT)
    world.answer_when_told(KEPT)
    for name in CUT:
        world.site(name)
    web = fakeweb_factory(world)
    queue.seed(db, [KEPT])
    worker = start_crawler(
        web, CANARY_HOSTS="canary.test", RETRY_TIMES=0, DOWNLOAD_TIMEOUT=CRAWL_BOUND
    )
    wait_until(lambda: web.fetches(KEPT), 60, f"{KEPT}'s page to be asked for")
    web.set_network_down(True)  # every new connection is reset; kept.alive.test's stays
    queue.seed(db, CUT)

    def every_host_held_back() -> bool:
        return set(held_tries(db)) == set(CUT) and STARTED in worker.log()

    wait_until(every_host_held_back, 90, "every host to be held back in the outage")
    web.answer_waiting()
    wait_until(lambda: host_facts(db, KEPT).outcome is not None, 60, f"{KEPT} to settle")
    checks = len(web.dns_queries("canary.test"))  # each check of the network looks it up
    wait_until(
        lambda: len(web.dns_queries("canary.test")) >= checks + 2 or ENDED in worker.log(),
        90,
        "two more checks of the network after that answer",
    )
    assert ENDED not in worker.log(), "an answer over an old connection ended the outage"
    assert not [name for name in CUT if host_facts(db, name).outcome is not None]
    web.set_network_down(False)
    worker.wait()

    log = worker.log()
    assert log.count(STARTED) == 1 and log.count(ENDED) == 1
    assert log.index(ENDED) < log.index(DRAINED)
    assert all(host_facts(db, name).outcome == "OK" for name in [KEPT, *CUT])
    assert held_tries(db) == dict.fromkeys(CUT, 1)  # held once, asked again once
    asked = requests_per_host(web)
    assert all(asked[name, "GET", "/"] == 1 for name in [KEPT, *CUT]), asked
    # The one check that found the network back asked the canary's status line.
    assert [key for key in asked if key[1] == "HEAD"] == [("canary.test", "HEAD", "/")], asked
    assert max(asked.values()) == 1, asked
