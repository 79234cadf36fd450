"""Deferred blocks: kept in the database, shown on every panel page."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from crawler.db.rules import deny_entries, trap_windows
from crawler.rules.trap_guard import TrapGuard
from tests.dbhelpers import record_outcomes

pytest_plugins = ["tests.unit.test_panel_support"]

WHY = "resolver/network not answering (canaries: <b>a.test</b> DNS_TIMEOUT)"


def test_a_deferral_keeps_its_first_date_and_is_cleared(db):
    trap_windows.defer_block(db, "trap.test", "first")
    with db.connect() as conn:
        first = trap_windows.deferred_blocks(conn)
    trap_windows.defer_block(db, "trap.test", "again")
    trap_windows.defer_block(db, "other.test", "later")
    with db.connect() as conn:
        now = trap_windows.deferred_blocks(conn)
    assert (now.roots, now.since, now.why) == (2, first.since, "again")
    trap_windows.clear_deferral(db, "trap.test")
    trap_windows.clear_deferral(db, "other.test")
    with db.connect() as conn:
        assert trap_windows.deferred_blocks(conn) is None


def test_every_page_shows_the_banner_while_blocks_are_deferred(client, db):
    assert "Blocks deferred" not in client.get("/").get_data(as_text=True)
    trap_windows.defer_block(db, "trap.test", WHY)
    for page in ("/", "/no_follow", "/blocked"):
        html = client.get(page).get_data(as_text=True)
        assert "Blocks deferred: resolver/network not answering" in html
        assert "&lt;b&gt;a.test&lt;/b&gt;" in html and "<b>a.test</b>" not in html
    trap_windows.clear_deferral(db, "trap.test")
    assert "Blocks deferred" not in client.get("/").get_data(as_text=True)


def run(coroutine):
    """Run on a loop of its own thread: an earlier test may leave this thread's loop set."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def test_a_deferred_block_is_made_when_looked_at_again(db):
    failures = [(f"n{i}.trap.test", "DNS_NXDOMAIN") for i in range(4)]
    said = []

    async def refuse(domain, reason):
        said.append(domain)
        return False

    guard = TrapGuard(db, 4, "test", confirm=refuse)
    assert run(guard.observe_many(failures)) == {}
    trap_windows.defer_block(db, "trap.test", WHY)  # what the refusing self-check wrote
    assert said == ["trap.test"] and deny_entries.list_entries(db, "blocked") == []

    async def agree(domain, reason):
        return True

    guard.confirm = agree
    assert list(run(guard.recheck_deferred())) == ["trap.test"]
    assert [e["hostname"] for e in deny_entries.list_entries(db, "blocked")] == ["trap.test"]
    assert trap_windows.deferrals(db) == []


def test_a_deferral_whose_window_no_longer_proves_a_trap_is_forgotten(db):
    record_outcomes(db, [(f"n{i}.wild.test", "DNS_NXDOMAIN") for i in range(3)], size=4)
    record_outcomes(db, [("alive.wild.test", "OK")], size=4)
    trap_windows.defer_block(db, "wild.test", WHY)
    assert run(TrapGuard(db, 4, "test").recheck_deferred()) == {}
    assert trap_windows.deferrals(db) == [] and deny_entries.list_entries(db, "blocked") == []


def test_the_banner_names_a_silent_world_and_a_stale_worker_is_ignored(client, db):
    from datetime import UTC, datetime

    from sqlalchemy import text

    from crawler.db.crawl import queue
    from crawler.db.rules import world_silences

    since = datetime(2026, 12, 1, 12, 36, 27, tzinfo=UTC)
    held = [f"n{i}.held.test" for i in range(57)]
    queue.save_hosts(db, held)
    queue.retry_soon(db, held, timedelta(seconds=30), "DNS_TIMEOUT")
    world_silences.report(db, "w1:1", since, never=False, held_back=57)
    trap_windows.defer_block(db, "trap.test", WHY)
    html = page_text(client, "/no_follow")
    assert "No host has answered since 2026-12-01 12:36" in html
    assert "blocks are held (57 failing hosts tried again, not settled; 1 root waiting)" in html
    assert "Blocks deferred" not in html  # one banner, the cause first
    world_silences.clear(db, "w1:1")
    world_silences.report(db, "w2:2", since, never=True, held_back=1)
    html = page_text(client, "/")
    assert "No host has answered yet in this database; blocks are held (57 failing hosts" in html
    with db.begin() as conn:  # a worker killed mid-outage, long ago
        conn.execute(text("UPDATE world_silences SET checked_at = now() - interval '1 hour'"))
    html = page_text(client, "/")
    assert "No host has answered" not in html and "Blocks deferred" in html
    trap_windows.clear_deferral(db, "trap.test")


def page_text(client, page: str) -> str:
    """The page with its whitespace runs made single spaces (the template wraps lines)."""
    return " ".join(client.get(page).get_data(as_text=True).split())
