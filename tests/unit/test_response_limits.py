"""What one host's fetch may save and spend: the names' caps, the reading budget, and the
claim after two leases ran out in flight."""

from __future__ import annotations

from datetime import timedelta

from scrapy.exceptions import DownloadFailedError
from sqlalchemy import text
from twisted.python.failure import Failure
from twisted.web.client import ResponseFailed

from crawler.core.budget import BUDGET_SPENT, ExtractBudget
from crawler.core.denylist import DenyList
from crawler.core.links import FilteredLinks, filter_found
from crawler.core.namecaps import OVER_CAP, NameCaps
from crawler.core.pagelinks import document_urls, parse_document
from crawler.db.crawl import claims, queue, unfinished
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.network.failures import classify
from crawler.network.headerbound import HeadersTooLarge

pytest_plugins = ["tests.unit.test_panel_support"]

PAGE = "page.test"


def found(names) -> list[tuple[str, str]]:
    return [(f"https://{name}/", "a href") for name in names]


def test_names_past_the_page_cap_are_dropped_as_over_cap():
    caps = NameCaps(per_page=100, per_root=100)
    names = [f"site{i}.test" for i in range(250)]
    links = filter_found(found(names + names), PAGE, DenyList(), caps=caps)
    assert links.hostnames == set(names[:100])
    assert links.dropped[OVER_CAP] == 300  # each link to a name over the cap, both times


def test_one_roots_names_past_its_cap_leave_room_for_the_rest():
    caps = NameCaps(per_page=100, per_root=10)
    wildcard = [f"w{i}.flood.test" for i in range(50)]
    others = [f"site{i}.test" for i in range(20)]
    links = filter_found(found(wildcard + others), PAGE, DenyList(), caps=caps)
    assert len([n for n in links.hostnames if n.endswith(".flood.test")]) == 10
    assert set(others) <= links.hostnames
    assert links.dropped[OVER_CAP] == 40


def test_the_caps_hold_across_the_responses_of_one_fetch():
    caps = NameCaps(per_page=30, per_root=30)
    hop = filter_found(found(f"a{i}.test" for i in range(20)), PAGE, DenyList(), caps=caps)
    page = filter_found(found(f"b{i}.test" for i in range(20)), PAGE, DenyList(), caps=caps)
    both = hop.merged(page)
    assert len(both.hostnames) == 30
    assert both.dropped[OVER_CAP] == 10


def test_the_fetched_host_itself_is_never_over_the_cap():
    caps = NameCaps(per_page=1, per_root=1, own=PAGE)
    links = filter_found(found([PAGE, "a.test", "b.test", PAGE]), PAGE, DenyList(), caps=caps)
    assert links.hostnames == {PAGE, "a.test"}
    assert links.dropped == {OVER_CAP: 1}


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_reading_stops_once_the_budget_is_spent_and_says_why():
    clock = Clock()
    budget = ExtractBudget(1.0, clock)
    budget.begin()
    names = (f"site{i}.test" for i in range(100_000))

    def slow_names():
        for i, name in enumerate(names):
            clock.now = i / 1000  # a millisecond a link: the budget lasts 1,000 of them
            yield f"https://{name}/", "a href"

    links = filter_found(slow_names(), PAGE, DenyList(), budget=budget)
    assert budget.stopped == BUDGET_SPENT
    assert 1000 <= links.found < 2000


def test_the_budget_counts_every_reading_spell_of_a_fetch():
    clock = Clock()
    budget = ExtractBudget(1.0, clock)
    for _ in range(3):
        budget.begin()
        clock.now += 0.4  # each hop reads for 0.4 s; between them the clock runs on
        budget.end()
        clock.now += 10
    budget.begin()
    assert budget.exhausted()


def test_the_document_walk_stops_once_the_budget_is_spent():
    clock = Clock()
    budget = ExtractBudget(1.0, clock)
    budget.begin()
    clock.now = 5.0
    html = "".join(f'<a href="https://site{i}.test/">x</a>' for i in range(5000))
    page = document_urls(parse_document(html), budget)
    assert budget.stopped == BUDGET_SPENT
    assert len(page.urls) < 5000


def test_a_budget_not_spent_reads_everything():
    budget = ExtractBudget(60.0, Clock())
    budget.begin()
    html = "".join(f'<a href="https://site{i}.test/">x</a>' for i in range(5000))
    assert len(document_urls(parse_document(html), budget).urls) == 5000
    assert budget.stopped is None


LEASE = timedelta(seconds=600)


def lease_runs_out(db, hostname: str) -> None:
    with db.begin() as conn:
        conn.execute(
            text("UPDATE hosts SET next_claim_at = now() - interval '1 s' WHERE hostname = :h"),
            {"h": hostname},
        )


def test_a_host_claimed_after_two_leases_ran_out_is_named(db):
    queue.save_hosts(db, ["pill.test", "fine.test"])
    named = []
    for _ in range(3):
        hosts = claims.claim(db, 10, "w1", LEASE)
        named.append(unfinished.count_claims(db, hosts))
        lease_runs_out(db, "pill.test")
        if "fine.test" in hosts:
            queue.finish_many(db, [Crawled("fine.test", CrawlResult("OK", 200))])
    assert named == [[], [], ["pill.test"]]


def test_a_finish_starts_the_count_again(db):
    queue.save_hosts(db, ["host.test"])
    for _ in range(2):
        unfinished.count_claims(db, claims.claim(db, 10, "w1", LEASE))
        lease_runs_out(db, "host.test")
    queue.finish_many(db, [Crawled("host.test", CrawlResult("OK", 200), recrawl_after=LEASE * 0)])
    assert unfinished.count_claims(db, claims.claim(db, 10, "w1", LEASE)) == []


def test_the_host_page_shows_names_over_the_caps_and_a_stopped_reading(client, db):
    queue.save_hosts(db, ["flood.test"])
    result = CrawlResult("OK", 200, extract_stopped=BUDGET_SPENT)
    links = FilteredLinks(found=12_345, dropped={OVER_CAP: 12_345})
    queue.finish_many(db, [Crawled("flood.test", result, links)])
    page = client.get("/hosts/flood.test").get_data(as_text=True)
    assert "12,345 of them over the names' caps" in page
    assert "reading stopped" in page and BUDGET_SPENT in page


def test_a_worker_that_stops_gracefully_takes_back_its_claims_counts(db):
    queue.save_hosts(db, ["slow.test"])
    for _ in range(2):  # two workers stopped, each with the host in flight
        unfinished.count_claims(db, claims.claim(db, 10, "w1", LEASE))
        unfinished.forgive(db, ["slow.test"], "w1")
        lease_runs_out(db, "slow.test")
    assert unfinished.count_claims(db, claims.claim(db, 10, "w1", LEASE)) == []


def test_a_workers_forgiveness_leaves_another_workers_claim_alone(db):
    queue.save_hosts(db, ["pill.test"])
    for worker in ("w1", "w2"):
        unfinished.count_claims(db, claims.claim(db, 10, worker, LEASE))
        lease_runs_out(db, "pill.test")
    unfinished.forgive(db, ["pill.test"], "w1")  # w1 stops late: pill.test is w2's now
    assert unfinished.count_claims(db, claims.claim(db, 10, "w3", LEASE)) == ["pill.test"]


def test_a_head_past_its_bound_is_too_large():
    failed = ResponseFailed([Failure(HeadersTooLarge("response head past 1024 bytes"))])
    try:
        raise DownloadFailedError(str(failed)) from failed
    except DownloadFailedError as exc:
        assert classify(exc, "heads.test") == "HTTP_TOO_LARGE"
