"""A host held back in an outage, in the database: pending for a draining crawl whatever
its row's date, given back due at the outage's end, settled by its next answer. On one
server and on a cluster."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from crawler.core.outcomes import DNS_TIMEOUT, OK
from crawler.db.crawl import claims, queue
from crawler.db.crawl.queue import CrawlResult
from crawler.db.rules import denied_rows, deny_entries
from tests.dbhelpers import finish
from tests.waiting import WAITS_ON_A_LOCK

LEASE = timedelta(seconds=8)
DATES = {
    "a lease that ran out": "now() - interval '1 minute'",
    "a date past the lease": "now() + interval '1 hour'",
}


def held_back(engine, hostname: str) -> None:
    """Claimed by w1, then held back in our outage (as crawler.rules.held_back holds it)."""
    queue.save_hosts(engine, [hostname])
    assert claims.claim(engine, 1, "w1", lease=LEASE) == [hostname]
    queue.retry_soon(engine, [hostname], LEASE, DNS_TIMEOUT)


def date(engine, hostname: str, when: str) -> None:
    with engine.begin() as conn:
        conn.execute(
            text(f"UPDATE hosts SET next_claim_at = {when} WHERE hostname = :h"), {"h": hostname}
        )


@pytest.mark.parametrize("deployment", sorted(WAITS_ON_A_LOCK))
@pytest.mark.parametrize("when", list(DATES))
def test_a_host_held_back_keeps_a_draining_crawl_pending_whatever_its_date(
    deployment, when, request
):
    engine = request.getfixturevalue(deployment)
    held_back(engine, "h.held.test")
    date(engine, "h.held.test", DATES[when])

    assert claims.crawl_pending(engine, LEASE)
    queue.release_held(engine, ["h.held.test"], "w1")  # the outage's end: due now
    assert claims.crawl_pending(engine, LEASE)
    [asked] = claims.claim(engine, 1, "w2", lease=LEASE)
    finish(engine, asked, CrawlResult(OK, 200, "http://h.held.test/", ""))
    assert not claims.crawl_pending(engine, LEASE)  # settled: nothing left to wait for


@pytest.mark.parametrize("deployment", sorted(WAITS_ON_A_LOCK))
def test_a_host_held_back_that_an_entry_takes_out_is_not_waited_for(deployment, request):
    engine = request.getfixturevalue(deployment)
    held_back(engine, "h.gone.test")
    date(engine, "h.gone.test", DATES["a date past the lease"])
    deny_entries.add_no_follow(engine, ["gone.test"])
    denied_rows.take_out_denied(engine, "h.gone.test", "gone.test")

    assert not claims.crawl_pending(engine, LEASE)
