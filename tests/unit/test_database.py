"""crawler.db on real Postgres: saving, finishing, deny entries, the trap window."""

from __future__ import annotations

import os
import socket
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from crawler.core.denylist import DenyList
from crawler.core.outcomes import DNS_NXDOMAIN, OK, TCP_REFUSED
from crawler.core.traps import Observation, trap_reason
from crawler.db.crawl import claims, queue
from crawler.db.crawl.queue import CrawlResult
from crawler.db.rules import denied_rows, deny_entries, trap_windows
from crawler.rules.live_deny_list import LiveDenyList
from tests.conftest import insert_stale_row
from tests.dbhelpers import finish, record_outcome
from tests.waiting import WAIT_BOUND, WAITS_ON_A_LOCK, wait_until


def queue_row(db, hostname: str):
    with db.connect() as conn:
        return conn.execute(
            text("SELECT * FROM queue WHERE hostname = :h"), {"h": hostname}
        ).first()


def hostnames(db) -> set[str]:
    with db.connect() as conn:
        return set(conn.execute(text("SELECT hostname FROM hosts")).scalars())


def claim_all(db) -> set[str]:
    return set(claims.claim(db, 10_000, "test-worker"))


def test_save_hosts_is_idempotent_and_due_now(db):
    assert queue.save_hosts(db, ["a.test", "b.test"]) == 2
    assert queue.save_hosts(db, ["b.test", "c.test"]) == 1
    assert hostnames(db) == {"a.test", "b.test", "c.test"}
    assert claim_all(db) == {"a.test", "b.test", "c.test"}


def test_finish_writes_result_links_and_next_date(db):
    queue.save_hosts(db, ["page.test"])
    deny_entries.add_no_follow(db, ["social.test"])
    claimed = claims.claim(db, 1, "w1")
    hrefs = ["/about", "http://new.test/", "http://SOCIAL.test:8080/x", "mailto:x@y.test"]
    links = finish(db, claimed[0], CrawlResult(OK, 200, "http://page.test/", "Page"), hrefs)
    assert links.hostnames == {"new.test"}
    assert hostnames(db) >= {"page.test", "new.test"}
    assert "www.social.test" not in hostnames(db)
    row = queue_row(db, "page.test")
    assert row.claimed_by is None
    assert row.next_claim_at > datetime.now(UTC) + timedelta(days=6)
    with db.connect() as conn:
        host = conn.execute(text("SELECT * FROM hosts WHERE hostname = 'page.test'")).first()
    assert (host.outcome, host.http_status, host.title) == (OK, 200, "Page")
    assert (host.links_found, host.links_saved, host.links_filtered) == (4, 1, 2)


def test_finish_failing_half_way_writes_nothing(db, monkeypatch):
    queue.save_hosts(db, ["page.test"])
    claims.claim(db, 1, "w1")
    before = queue_row(db, "page.test")

    def crash(*args, **kwargs):
        raise RuntimeError("injected failure")

    monkeypatch.setattr(queue, "insert_hosts", crash)  # after the results write
    with pytest.raises(RuntimeError, match="injected"):
        finish(db, "page.test", CrawlResult(OK, 200), ["http://new.test/"])
    assert hostnames(db) == {"page.test"}
    assert queue_row(db, "page.test") == before
    with db.connect() as conn:
        assert conn.execute(text("SELECT outcome FROM hosts")).scalar() is None


def test_no_follow_takes_hosts_out_and_removal_brings_them_back(db):
    queue.save_hosts(db, ["www.social.test", "a.b.social.test", "notsocial.test"])
    [change] = deny_entries.add_no_follow(db, ["HTTP://Social.TEST:8080/"], note="giant")
    assert (change.hostname, change.status) == ("social.test", "added")
    assert claim_all(db) == {"notsocial.test"}
    assert queue_row(db, "www.social.test").denied_by == "social.test"
    [again] = deny_entries.add_no_follow(db, ["social.test"])
    assert again.status == "already"
    [removed] = deny_entries.remove_no_follow(db, ["social.test"])
    assert removed.status == "removed"
    assert "2 hosts back" in removed.message
    # The restored rows keep their dates, which are due.
    assert claim_all(db) == {"www.social.test", "a.b.social.test"}


def test_removing_an_inner_entry_leaves_hosts_under_the_outer_one(db):
    queue.save_hosts(db, ["x.www.example.test"])
    deny_entries.add_no_follow(db, ["www.example.test"])
    deny_entries.add_no_follow(db, ["example.test"])
    deny_entries.remove_no_follow(db, ["www.example.test"])
    assert queue_row(db, "x.www.example.test").denied_by == "example.test"
    assert claim_all(db) == set()


def test_claim_skips_host_under_entry_even_if_not_taken_out(db):
    deny_entries.add_no_follow(db, ["social.test"])
    insert_stale_row(db, "x.social.test", "social.test")  # the claim must refuse it
    assert claim_all(db) == set()


def stored_entries(db) -> DenyList:
    """The deny list as a worker would load it now."""
    return DenyList(deny_entries.deny_entries(db))


def test_a_workers_deny_list_loads_once_and_follows_changes(db):
    deny_entries.add_no_follow(db, ["social.test"])
    deny_entries.upsert_blocked(db, "trap.test", "test reason")
    refused, queued = queue.seed(db, ["www.social.test", "fresh.test"])
    assert (refused.status, refused.message) == ("refused", "under no_follow entry social.test")
    assert queued.status == "queued"
    worker = LiveDenyList(db)
    worker.remember("early.test", "no_follow")  # before the load: the load reads it
    loaded = worker.load()
    try:
        assert loaded.entries() == {"social.test": "no_follow", "trap.test": "blocked"}
        worker.remember("trap.test", None)
        worker.remember("big.test", "no_follow")
        assert worker.loaded is loaded  # kept in step in place, not reloaded
        assert loaded.entries() == {"social.test": "no_follow", "big.test": "no_follow"}
        worker.reload()
        assert worker.loaded is loaded
        assert loaded.entries() == {"social.test": "no_follow", "trap.test": "blocked"}
    finally:
        worker.stop()


def test_upsert_blocked_and_unblock(db):
    queue.save_hosts(db, ["a.trap.test", "b.trap.test", "ok.test"])
    assert deny_entries.upsert_blocked(db, "trap.test", "test reason") is True
    assert deny_entries.upsert_blocked(db, "trap.test", "again") is False
    assert stored_entries(db).denial("z.trap.test") == ("trap.test", "blocked")
    assert claim_all(db) == {"ok.test"}
    [entry] = deny_entries.list_entries(db, "blocked")
    assert (entry["hostname"], entry["blocked_reason"]) == ("trap.test", "test reason")
    [change] = deny_entries.unblock(db, ["trap.test"], note="false positive")
    assert change.status == "unblocked"
    assert deny_entries.list_entries(db, "blocked") == []
    assert not stored_entries(db).is_denied("a.trap.test")
    with db.connect() as conn:
        audit = conn.execute(text("SELECT action, actor, detail FROM change_log ORDER BY id")).all()
    assert [a.action for a in audit] == ["block", "unblock"]
    assert "false positive" in audit[1].detail and "test reason" in audit[1].detail


def test_block_does_not_override_no_follow(db):
    deny_entries.add_no_follow(db, ["social.test"])
    assert deny_entries.upsert_blocked(db, "social.test", "trap") is False
    assert queue_row(db, "social.test").status_reason == "no_follow"


def test_seed_refuses_bad_and_denied_input(db):
    deny_entries.add_no_follow(db, ["social.test"])
    changes = queue.seed(db, ["Example.TEST:8080", "www.social.test", "bad..name", "example.test"])
    assert [c.status for c in changes] == ["queued", "refused", "refused", "already"]
    assert "no_follow entry social.test" in changes[1].message
    assert "empty label" in changes[2].message


def test_trap_window_blocks_after_fifty_failures(db):
    reasons = [record_outcome(db, f"n{i}.trap.test", DNS_NXDOMAIN, size=50) for i in range(49)]
    assert not any(reasons) and not stored_entries(db).is_denied("x.trap.test")
    reason = record_outcome(db, "n49.trap.test", TCP_REFUSED, size=50)
    assert reason and "subdomain generator" in reason
    assert "DNS_NXDOMAIN 49" in reason and "TCP_REFUSED 1" in reason
    assert stored_entries(db).is_denied("x.trap.test")
    assert len(trap_windows.window(db, "trap.test")) == 50


def test_one_ok_in_the_window_prevents_a_block(db):
    record_outcome(db, "alive.wild.test", OK, size=50)
    for i in range(49):
        assert record_outcome(db, f"n{i}.wild.test", DNS_NXDOMAIN, size=50) is None
    # The OK falls out only when 50 newer unique failures push it out.
    assert record_outcome(db, "n49.wild.test", DNS_NXDOMAIN, size=50) is not None


def test_a_subdomain_seen_again_replaces_its_outcome(db):
    for _ in range(60):
        record_outcome(db, "same.trap.test", DNS_NXDOMAIN, size=50)
    assert [o.hostname for o in trap_windows.window(db, "trap.test")] == ["same.trap.test"]
    assert not stored_entries(db).is_denied("trap.test")


def test_trap_reason_is_pure_and_needs_a_full_window():
    now = datetime.now(UTC)
    window = [Observation(f"n{i}.t.test", DNS_NXDOMAIN, now) for i in range(3)]
    assert trap_reason("t.test", window, size=4) is None
    assert "the last 3 unique subdomains of t.test" in trap_reason("t.test", window, size=3)


def test_taking_out_a_row_needs_its_entry_to_stand(db):
    queue.save_hosts(db, ["x.gone.test"])
    deny_entries.add_no_follow(db, ["gone.test"])
    deny_entries.remove_no_follow(db, ["gone.test"])
    assert claims.claim(db, 10, "w") == ["x.gone.test"]
    denied_rows.take_out_denied(db, "x.gone.test", "gone.test")  # a worker that heard late
    row = queue_row(db, "x.gone.test")
    assert (row.denied_by, row.claimed_by) == (None, None)
    assert claims.claim(db, 10, "w") == ["x.gone.test"]  # due again, not stranded


def test_crawl_is_pending_while_anything_is_due_or_claimed(db):
    queue.save_hosts(db, ["seed.test"])
    assert claims.crawl_pending(db)  # due
    [seed] = claims.claim(db, 1, "w1")
    assert claims.claim(db, 1, "w2") == [] and claims.crawl_pending(db)  # w1's claim may add hosts
    finish(db, seed, CrawlResult(OK, 200, "http://seed.test/", ""), ["http://next.test/"])
    # The claim is gone and its link is due, seen in one snapshot: a worker whose
    # claim just came back empty must not call this drained.
    assert claims.crawl_pending(db)
    [link] = claims.claim(db, 1, "w2")
    finish(db, link, CrawlResult(OK, 200, "http://next.test/", ""), [])
    assert not claims.crawl_pending(db)


@pytest.mark.parametrize("deployment", sorted(WAITS_ON_A_LOCK))
def test_a_claimed_host_that_became_an_entry_is_released_and_due_when_lifted(deployment, request):
    engine = request.getfixturevalue(deployment)
    queue.save_hosts(engine, ["flip.test"])
    assert claims.claim(engine, 10, "w", lease=timedelta(hours=1)) == ["flip.test"]
    deny_entries.upsert_blocked(engine, "flip.test", "trap")
    denied_rows.take_out_denied(engine, "flip.test", "flip.test")  # its request was then denied
    assert queue_row(engine, "flip.test").claimed_by is None
    deny_entries.unblock(engine, ["flip.test"])
    # Due at once, not when the released claim's lease would have ended: a crawl that
    # drains on "nothing due" left it queued and uncrawled.
    assert claims.claim(engine, 10, "w") == ["flip.test"]


@pytest.mark.parametrize("deployment", sorted(WAITS_ON_A_LOCK))
def test_a_claim_given_back_after_its_host_became_an_entry_is_due_when_lifted(deployment, request):
    engine = request.getfixturevalue(deployment)
    queue.save_hosts(engine, ["gift.test"])
    assert claims.claim(engine, 10, "w", lease=timedelta(hours=1)) == ["gift.test"]
    deny_entries.upsert_blocked(engine, "gift.test", "trap")
    queue.release(engine, ["gift.test"])  # a worker stopping gives its claims back
    deny_entries.unblock(engine, ["gift.test"])
    assert claims.claim(engine, 10, "w") == ["gift.test"]  # not an hour later


def test_a_denied_host_is_due_at_once_when_its_entry_goes(db):
    queue.save_hosts(db, ["x.brief.test"])
    assert claims.claim(db, 10, "w", lease=timedelta(hours=1)) == ["x.brief.test"]
    deny_entries.add_no_follow(db, ["brief.test"])
    denied_rows.take_out_denied(db, "x.brief.test", "brief.test")
    deny_entries.remove_no_follow(db, ["brief.test"])
    assert claims.claim(db, 10, "w") == ["x.brief.test"]  # not an hour later


def sockets_to(port: int) -> list[socket.socket]:
    """This process's TCP sockets connected to 127.0.0.1:`port` (duplicates, to inspect)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            sock = socket.socket(fileno=os.dup(int(fd)))
        except OSError:
            continue  # not a socket
        try:
            if sock.family == socket.AF_INET and sock.getpeername() == ("127.0.0.1", port):
                found.append(sock)
                continue
        except OSError:
            pass
        sock.close()
    return found


def test_connections_notice_a_vanished_server():
    """A server that takes the connection and then says nothing, as one that vanished
    behind a dead network would: the engine's connect gives up instead of hanging, and
    the kernel probes its socket so an idle connection to a vanished server dies too
    (silence itself cannot be made on loopback without a packet filter, so that half is
    read from the kernel's socket options)."""
    from crawler.db.server.engine import get_engine

    silent = socket.create_server(("127.0.0.1", 0))  # takes connections, never answers
    port = silent.getsockname()[1]
    engine = get_engine(f"postgresql+psycopg://nobody@127.0.0.1:{port}/none")
    pool = ThreadPoolExecutor(1)
    try:
        connecting = pool.submit(engine.connect)
        (client,) = wait_until(lambda: sockets_to(port), what="the engine to connect")
        with client:
            probes = (
                client.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
            )
        with pytest.raises(OperationalError, match="timeout"):
            connecting.result(WAIT_BOUND)  # gave up by itself
    finally:
        silent.close()  # resets a connect still waiting, so a failure cannot hang
        pool.shutdown()
        engine.dispose()
    keepalive, idle, interval, count = probes
    assert keepalive == 1
    # Dead within two minutes of silence (the kernel's default is over two hours).
    assert idle + interval * count <= 120
