"""An unblock starts the count afresh: lifting an entry clears its root's trap window."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from crawler.rules.trap_guard import TrapGuard
from tests.dbhelpers import DEFAULT_WINDOW, record_outcomes
from webpanel.queries import root_rows

pytest_plugins = ["tests.unit.test_panel_support"]


def failures(prefix: str, n: int, outcome: str) -> list[tuple[str, str]]:
    return [(f"{prefix}{i}.trap.test", outcome) for i in range(n)]


def crawl(db, outcomes: list[tuple[str, str]]) -> dict[str, str]:
    """Hosts known first (the roots table counts known roots), then their outcomes."""
    queue.save_hosts(db, [hostname for hostname, _ in outcomes])
    return record_outcomes(db, outcomes)


def window_counts(db, domain: str) -> tuple[int, int, int]:
    """(rows in trap_window, the roots table's window_size and window_failed)."""
    with db.connect() as conn:
        rows = conn.execute(
            text("SELECT count(*) FROM trap_window WHERE root = :r"), {"r": domain}
        ).scalar_one()
        line = root_rows.root_line(conn, domain)
    return rows, line.window_size, line.window_failed


def test_a_new_block_after_an_unblock_needs_a_full_window_of_new_failures(db):
    blocked = crawl(db, failures("old", DEFAULT_WINDOW, "DNS_TIMEOUT"))
    assert "DNS_TIMEOUT 50" in blocked["trap.test"]
    assert window_counts(db, "trap.test") == (50, 50, 50)
    (change,) = deny_entries.unblock(db, ["trap.test"], "ann", note="false positive")
    assert change.status == "unblocked"
    assert "trap window cleared (50 outcomes)" in change.message
    assert window_counts(db, "trap.test") == (0, 0, 0)  # /roots shows the fresh window

    assert crawl(db, failures("new", 10, "DNS_NXDOMAIN")) == {}
    assert deny_entries.list_entries(db, "blocked") == []
    assert window_counts(db, "trap.test") == (10, 10, 10)

    blocked = crawl(db, failures("new", DEFAULT_WINDOW, "DNS_NXDOMAIN"))
    reason = blocked["trap.test"]
    assert "DNS_NXDOMAIN 50" in reason and "DNS_TIMEOUT" not in reason
    assert "old" not in reason  # no sample name from before the unblock
    [entry] = deny_entries.list_entries(db, "blocked")
    assert entry["blocked_reason"].startswith(reason)


def test_the_roots_page_shows_the_fresh_window_after_an_unblock(client, db):
    crawl(db, failures("old", DEFAULT_WINDOW, "DNS_TIMEOUT"))
    assert "50 of the last 50 failed" in client.get("/roots/trap.test").get_data(as_text=True)
    deny_entries.unblock(db, ["trap.test"])
    page = client.get("/roots/trap.test").get_data(as_text=True)
    assert "no subdomain in the window yet" in page and "near a block" not in page


def test_the_change_log_says_the_window_was_cleared(db):
    crawl(db, failures("old", DEFAULT_WINDOW, "DNS_TIMEOUT"))
    deny_entries.unblock(db, ["trap.test"], "ann", note="false positive")
    with db.connect() as conn:
        detail = conn.execute(
            text("SELECT detail FROM change_log WHERE action = 'unblock'")
        ).scalar_one()
    assert detail.startswith("false positive; subdomain generator: the last 50")
    assert detail.endswith("; trap window cleared (50 outcomes)")


def test_removing_a_no_follow_root_clears_its_window_and_no_other(db):
    crawl(db, failures("a", 5, "DNS_TIMEOUT"))
    crawl(db, [(f"s{i}.other.test", "DNS_TIMEOUT") for i in range(5)])
    deny_entries.add_no_follow(db, ["trap.test", "x.other.test"])
    assert window_counts(db, "trap.test") == (5, 5, 5)  # adding an entry leaves the window
    removed = deny_entries.remove_no_follow(db, ["trap.test", "x.other.test"])
    assert [c.status for c in removed] == ["removed", "removed"]
    assert window_counts(db, "trap.test") == (0, 0, 0)
    assert window_counts(db, "other.test")[0] == 5  # x.other.test is no root: its root keeps it


def test_an_unblock_in_bulk_clears_each_roots_window(db):
    roots = [f"t{i}.test" for i in range(3)]
    for domain in roots:
        crawl(db, [(f"n{i}.{domain}", "TCP_REFUSED") for i in range(DEFAULT_WINDOW)])
    changes = deny_entries.unblock(db, [*roots, "never.test"])
    assert [c.status for c in changes] == ["unblocked"] * 3 + ["absent"]
    with db.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM trap_window")).scalar_one() == 0
        (items,) = conn.execute(text("SELECT details FROM change_log_items")).all()
    assert all(d.endswith("trap window cleared (50 outcomes)") for d in items.details)


def run(coroutine):
    """Run on a loop of its own thread: an earlier test may leave this thread's loop set."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def test_a_worker_that_blocked_a_root_blocks_it_again_after_an_unblock(db):
    """The worker's TrapGuard remembers what it blocked; an unblock makes it forget."""

    def still_denied(domain: str) -> bool:
        return domain in dict(deny_entries.deny_entries(db))

    guard = TrapGuard(db, 4, "test", still_denied=still_denied)
    assert list(run(guard.observe_many(failures("old", 4, "DNS_TIMEOUT")))) == ["trap.test"]
    deny_entries.unblock(db, ["trap.test"])
    assert run(guard.observe_many(failures("new", 3, "DNS_NXDOMAIN"))) == {}
    again = run(guard.observe_many(failures("new", 4, "DNS_NXDOMAIN")))
    assert "DNS_NXDOMAIN 4" in again["trap.test"]
    assert [e["hostname"] for e in deny_entries.list_entries(db, "blocked")] == ["trap.test"]
