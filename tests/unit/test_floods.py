"""Name floods: the trap rule's window per page that named new registered domains."""

from __future__ import annotations

from crawler.core.floods import FloodWatch
from crawler.core.links import FoundName
from crawler.db.crawl import queue
from crawler.db.rules import floods

pytest_plugins = ["tests.unit.test_panel_support"]

PAGE = "flood.test"


def names(n: int, under: str = "test") -> list[str]:
    return [f"gone{i}.{under}" for i in range(n)]


def found(hostnames: list[str]) -> list[FoundName]:
    """Names as a page's links carry them to the watch: each with its root."""
    return [FoundName.of(name) for name in hostnames]


def test_a_page_whose_last_new_roots_all_failed_at_dns_is_a_flood():
    watch = FloodWatch(size=5)
    watch.added(PAGE, found(names(8)))
    verdicts = [watch.settled(name, "DNS_NXDOMAIN") for name in names(8)]
    assert verdicts[:4] == [None] * 4
    flood = verdicts[4]
    assert flood.page == PAGE and flood.names == tuple(reversed(names(5)))
    assert "name flood" in flood.describe() and PAGE in flood.describe()
    assert verdicts[5:] == [None] * 3  # told once


def test_one_that_answers_clears_the_window():
    watch = FloodWatch(size=5)
    watch.added(PAGE, found(names(9)))
    outcomes = ["DNS_NXDOMAIN"] * 4 + ["OK"] + ["DNS_NXDOMAIN"] * 4
    assert not any(watch.settled(n, o) for n, o in zip(names(9), outcomes, strict=True))


def test_subdomains_and_failures_past_dns_are_the_trap_rules_not_a_flood():
    watch = FloodWatch(size=3)
    watch.added(PAGE, found([f"a{i}.wild.test" for i in range(5)] + names(3)))
    assert not any(watch.settled(f"a{i}.wild.test", "DNS_NXDOMAIN") for i in range(5))
    assert not any(watch.settled(n, "TCP_REFUSED") for n in names(3))


def test_names_from_other_pages_fill_their_own_windows():
    watch = FloodWatch(size=3)
    watch.added(PAGE, found(names(2)))
    watch.added("other.test", found(names(2, "example")))
    settled = [watch.settled(n, "DNS_NXDOMAIN") for n in names(2) + names(2, "example")]
    assert settled == [None] * 4


def test_memory_is_bounded_by_the_names_and_pages_it_keeps():
    watch = FloodWatch(size=3, names=10, pages=2)
    watch.added(PAGE, found(names(100)))
    assert len(watch._page_of) == 10
    assert watch.settled("gone0.test", "DNS_NXDOMAIN") is None  # forgotten
    for page in ("p1.test", "p2.test", "p3.test"):
        watch.added(page, found([f"n-{page}"]))
        watch.settled(f"n-{page}", "DNS_NXDOMAIN")
    assert len(watch._failed) == 2


def test_the_pages_host_page_says_it_named_a_flood(client, db):
    queue.save_hosts(db, [PAGE])
    floods.mark_flood(db, PAGE, "name flood: the last 50 new registered domains ...")
    page = client.get(f"/hosts/{PAGE}").get_data(as_text=True)
    assert "name flood: the last 50 new registered domains" in page
    assert "Add flood.test to no_follow" in page
