"""An unblock starts the count afresh, end to end: a real crawl blocks a trap, an operator
lifts the block, and the next crawl blocks it again on new failures only."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.e2e.conftest import UNBLOCKED
from tests.fakeweb import World


def window_names(db, domain: str) -> set[str]:
    with db.connect() as conn:
        rows = conn.execute(text("SELECT hostname FROM trap_window WHERE root = :r"), {"r": domain})
        return set(rows.scalars())


def hold_all_but(db, domain: str, due: int) -> None:
    """Keep `due` of the domain's queued hosts that never failed due now, the rest far off."""
    with db.begin() as conn:
        conn.execute(
            text(
                "UPDATE hosts SET next_claim_at = now() + interval '1 day'"
                " WHERE root = :r AND hostname NOT IN"
                " (SELECT hostname FROM queue WHERE root = :r AND next_claim_at <= now()"
                "  AND hostname NOT IN (SELECT hostname FROM hosts WHERE outcome IS NOT NULL)"
                "  ORDER BY hostname LIMIT :n)"
            ),
            {"r": domain, "n": due},
        )


def release(db, domain: str) -> None:
    """Make the domain's never-crawled hosts due again."""
    with db.begin() as conn:
        conn.execute(
            text(
                "UPDATE hosts SET next_claim_at = now() WHERE root = :r AND hostname NOT IN"
                " (SELECT hostname FROM hosts WHERE outcome IS NOT NULL)"
            ),
            {"r": domain},
        )


@pytest.mark.refetches(UNBLOCKED)
def test_an_unblocked_trap_is_blocked_again_on_new_failures_only(db, fakeweb_factory, crawl):
    world = World()
    world.site("hub.test", links=[f"http://n{i:03}.trap.test/" for i in range(200)])
    world.zone("trap.test", "nxdomain")
    web = fakeweb_factory(world)
    queue.seed(db, ["hub.test"])
    crawl(web, CLAIM_BATCH=8)
    assert [e["hostname"] for e in deny_entries.list_entries(db, "blocked")] == ["trap.test"]
    before = window_names(db, "trap.test")
    assert len(before) >= 50

    (lifted,) = deny_entries.unblock(db, ["trap.test"], "ops", note="false positive")
    assert "trap window cleared" in lifted.message and window_names(db, "trap.test") == set()
    with db.connect() as conn:
        lifted_at = conn.execute(text("SELECT max(at) FROM change_log")).scalar_one()

    hold_all_but(db, "trap.test", 10)
    crawl(web, CLAIM_BATCH=8)  # 10 new failures: far from a full window
    assert deny_entries.list_entries(db, "blocked") == []
    assert len(window_names(db, "trap.test")) == 10

    release(db, "trap.test")
    crawl(web, CLAIM_BATCH=8)  # the hosts the block took out are due again, and fail

    [entry] = deny_entries.list_entries(db, "blocked")
    after = window_names(db, "trap.test")
    assert len(after) >= 50 and not after & before  # a full window of new failures
    first = re.search(r"between (\S+ \S+) and", entry["blocked_reason"]).group(1)
    assert datetime.strptime(first, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) >= lifted_at.replace(
        microsecond=0
    )
    assert not any(name in entry["blocked_reason"] for name in before)
