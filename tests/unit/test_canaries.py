"""The self-check's default canaries: hosts that have ever answered OK in this database."""

from __future__ import annotations

from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.crawl.queue import CrawlResult
from crawler.db.rules.canaries import answered_hosts
from tests.dbhelpers import finish


def crawled(db, outcomes: dict[str, str]) -> None:
    queue.save_hosts(db, list(outcomes))
    for hostname, outcome in outcomes.items():
        finish(db, hostname, CrawlResult(outcome, 200 if outcome == "OK" else None))


def test_no_host_ever_answered_means_no_canary(db):
    crawled(db, {"a.test": "DNS_TIMEOUT", "b.test": "DNS_NXDOMAIN"})
    assert answered_hosts(db, 3) == []
    assert answered_hosts(db, 3, resolved=True) == []


def test_a_host_that_answered_long_ago_is_still_a_canary(db):
    crawled(db, {"old.test": "OK"})
    with db.begin() as conn:  # a crawl of last year, its hourly counts long gone
        conn.execute(text("UPDATE hosts SET last_crawled_at = now() - interval '1 year'"))
        conn.execute(text("DELETE FROM host_hours"))
    assert answered_hosts(db, 3) == ["old.test"]


def test_canaries_are_of_other_roots_newest_first_and_still_answering(db):
    crawled(db, {"first.test": "OK", "www.trap.test": "OK", "gone.test": "OK"})
    crawled(db, {"gone.test": "DNS_NXDOMAIN"})  # found dead while the world answered
    with db.begin() as conn:  # first.test answered in an earlier hour
        conn.execute(text("UPDATE host_hours SET hour = hour - interval '2 hours'"))
    crawled(db, {"second.test": "OK"})
    assert answered_hosts(db, 3, other_than="trap.test") == ["second.test", "first.test"]
    assert answered_hosts(db, 1) == ["second.test"]


def test_the_audit_also_takes_names_it_resolved(db):
    queue.save_hosts(db, ["resolved.test", "other.test"])
    with db.begin() as conn:
        conn.execute(
            text(
                "UPDATE hosts SET audit_outcome = 'DNS_ALIVE', audited_at = now()"
                " WHERE hostname = 'resolved.test'"
            )
        )
    assert answered_hosts(db, 3) == []
    assert answered_hosts(db, 3, resolved=True) == ["resolved.test"]
