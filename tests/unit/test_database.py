"""The Database class on real Postgres: saving, finishing, deny entries, the trap window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from crawler.db.database import CrawlResult, Database
from crawler.outcomes import DNS_NXDOMAIN, OK, TCP_REFUSED
from crawler.traps import Observation, trap_reason
from tests.conftest import insert_stale_row


def queue_row(db: Database, hostname: str):
    with db.engine.connect() as conn:
        return conn.execute(
            text("SELECT * FROM queue WHERE hostname = :h"), {"h": hostname}
        ).first()


def hostnames(db: Database) -> set[str]:
    with db.engine.connect() as conn:
        return set(conn.execute(text("SELECT hostname FROM hosts")).scalars())


def claim_all(db: Database) -> set[str]:
    return set(db.start_urls(10_000, "test-worker"))


def test_save_hosts_is_idempotent_and_due_now(db):
    assert db.save_hosts(["a.test", "b.test"]) == 2
    assert db.save_hosts(["b.test", "c.test"]) == 1
    assert hostnames(db) == {"a.test", "b.test", "c.test"}
    assert claim_all(db) == {"a.test", "b.test", "c.test"}


def test_finish_writes_result_links_and_next_date(db):
    db.save_hosts(["page.test"])
    db.add_no_follow(["social.test"])
    claimed = db.start_urls(1, "w1")
    hrefs = ["/about", "http://new.test/", "http://SOCIAL.test:8080/x", "mailto:x@y.test"]
    links = db.finish(claimed[0], CrawlResult(OK, 200, "http://page.test/", "Page"), hrefs)
    assert links.hostnames == {"new.test"}
    assert hostnames(db) >= {"page.test", "new.test"}
    assert "www.social.test" not in hostnames(db)
    row = queue_row(db, "page.test")
    assert row.claimed_by is None
    assert row.next_claim_at > datetime.now(UTC) + timedelta(days=6)
    with db.engine.connect() as conn:
        host = conn.execute(text("SELECT * FROM hosts WHERE hostname = 'page.test'")).first()
    assert (host.outcome, host.http_status, host.title) == (OK, 200, "Page")
    assert (host.links_found, host.links_saved, host.links_filtered) == (4, 1, 2)


def test_finish_failing_half_way_writes_nothing(db, monkeypatch):
    db.save_hosts(["page.test"])
    db.start_urls(1, "w1")
    before = queue_row(db, "page.test")

    def crash(*args, **kwargs):
        raise RuntimeError("injected failure")

    monkeypatch.setattr(Database, "_schedule", crash)
    with pytest.raises(RuntimeError, match="injected"):
        db.finish("page.test", CrawlResult(OK, 200), ["http://new.test/"])
    assert hostnames(db) == {"page.test"}
    assert queue_row(db, "page.test") == before
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT outcome FROM hosts")).scalar() is None


def test_no_follow_takes_hosts_out_and_removal_brings_them_back(db):
    db.save_hosts(["www.social.test", "a.b.social.test", "notsocial.test"])
    [change] = db.add_no_follow(["HTTP://Social.TEST:8080/"], note="giant")
    assert (change.hostname, change.status) == ("social.test", "added")
    assert claim_all(db) == {"notsocial.test"}
    assert queue_row(db, "www.social.test").denied_by == "social.test"
    [again] = db.add_no_follow(["social.test"])
    assert again.status == "already"
    [removed] = db.remove_no_follow(["social.test"])
    assert removed.status == "removed"
    assert "2 hosts back" in removed.message
    # The restored rows keep their dates, which are due.
    assert claim_all(db) == {"www.social.test", "a.b.social.test"}


def test_removing_an_inner_entry_leaves_hosts_under_the_outer_one(db):
    db.save_hosts(["x.www.example.test"])
    db.add_no_follow(["www.example.test"])
    db.add_no_follow(["example.test"])
    db.remove_no_follow(["www.example.test"])
    assert queue_row(db, "x.www.example.test").denied_by == "example.test"
    assert claim_all(db) == set()


def test_claim_skips_host_under_entry_even_if_not_taken_out(db):
    db.add_no_follow(["social.test"])
    insert_stale_row(db.engine, "x.social.test", "social.test")  # the claim must refuse it
    assert claim_all(db) == set()


def test_deny_list_loads_on_first_use_and_follows_every_write(db):
    panel = Database(db.engine, actor="panel")
    panel.add_no_follow(["social.test"])
    panel.upsert_blocked("trap.test", "test reason")
    refused, queued = panel.seed(["www.social.test", "fresh.test"])
    assert (refused.status, refused.message) == ("refused", "under no_follow entry social.test")
    assert queued.status == "queued"
    assert panel._denylist is None  # writers and seeds never load (or hold) the whole list
    worker = Database(db.engine, actor="worker")
    assert worker.denylist.entries() == {"social.test": "no_follow", "trap.test": "blocked"}
    loaded = worker.denylist
    worker.unblock(["trap.test"])
    worker.add_no_follow(["big.test"])
    assert worker.denylist is loaded  # kept in step in place, not reloaded
    assert loaded.entries() == {"social.test": "no_follow", "big.test": "no_follow"}
    assert panel._denylist is None


def test_upsert_blocked_and_unblock(db):
    db.save_hosts(["a.trap.test", "b.trap.test", "ok.test"])
    assert db.upsert_blocked("trap.test", "test reason") is True
    assert db.upsert_blocked("trap.test", "again") is False
    assert db.denylist.denial("z.trap.test") == ("trap.test", "blocked")
    assert claim_all(db) == {"ok.test"}
    [entry] = db.list_entries("blocked")
    assert (entry["hostname"], entry["blocked_reason"]) == ("trap.test", "test reason")
    [change] = db.unblock(["trap.test"], note="false positive")
    assert change.status == "unblocked"
    assert db.list_entries("blocked") == []
    assert not db.denylist.is_denied("a.trap.test")
    with db.engine.connect() as conn:
        audit = conn.execute(text("SELECT action, actor, detail FROM audit_log ORDER BY id")).all()
    assert [a.action for a in audit] == ["block", "unblock"]
    assert "false positive" in audit[1].detail and "test reason" in audit[1].detail


def test_block_does_not_override_no_follow(db):
    db.add_no_follow(["social.test"])
    assert db.upsert_blocked("social.test", "trap") is False
    assert queue_row(db, "social.test").status_reason == "no_follow"


def test_seed_refuses_bad_and_denied_input(db):
    db.add_no_follow(["social.test"])
    changes = db.seed(["Example.TEST:8080", "www.social.test", "bad..name", "example.test"])
    assert [c.status for c in changes] == ["queued", "refused", "refused", "already"]
    assert "no_follow entry social.test" in changes[1].message
    assert "empty label" in changes[2].message


def test_trap_window_blocks_after_fifty_failures(db):
    reasons = [db.record_outcome(f"n{i}.trap.test", DNS_NXDOMAIN, size=50) for i in range(49)]
    assert not any(reasons) and not db.denylist.is_denied("x.trap.test")
    reason = db.record_outcome("n49.trap.test", TCP_REFUSED, size=50)
    assert reason and "subdomain generator" in reason
    assert "DNS_NXDOMAIN 49" in reason and "TCP_REFUSED 1" in reason
    assert db.denylist.is_denied("x.trap.test")
    assert len(db.window("trap.test")) == 50


def test_one_ok_in_the_window_prevents_a_block(db):
    db.record_outcome("alive.wild.test", OK, size=50)
    for i in range(49):
        assert db.record_outcome(f"n{i}.wild.test", DNS_NXDOMAIN, size=50) is None
    # The OK falls out only when 50 newer unique failures push it out.
    assert db.record_outcome("n49.wild.test", DNS_NXDOMAIN, size=50) is not None


def test_a_subdomain_seen_again_replaces_its_outcome(db):
    for _ in range(60):
        db.record_outcome("same.trap.test", DNS_NXDOMAIN, size=50)
    assert [o.hostname for o in db.window("trap.test")] == ["same.trap.test"]
    assert not db.denylist.is_denied("trap.test")


def test_trap_reason_is_pure_and_needs_a_full_window():
    now = datetime.now(UTC)
    window = [Observation(f"n{i}.t.test", DNS_NXDOMAIN, now) for i in range(3)]
    assert trap_reason("t.test", window, size=4) is None
    assert "the last 3 unique subdomains of t.test" in trap_reason("t.test", window, size=3)


def test_taking_out_a_row_needs_its_entry_to_stand(db):
    db.save_hosts(["x.gone.test"])
    db.add_no_follow(["gone.test"])
    db.remove_no_follow(["gone.test"])
    assert db.start_urls(10, "w") == ["x.gone.test"]
    db.take_out_of_routing("x.gone.test", "gone.test")  # a worker that heard late
    row = queue_row(db, "x.gone.test")
    assert (row.denied_by, row.claimed_by) == (None, None)
    assert db.start_urls(10, "w") == ["x.gone.test"]  # due again, not stranded


def test_crawl_is_pending_while_anything_is_due_or_claimed(db):
    db.save_hosts(["seed.test"])
    assert db.crawl_pending()  # due
    [seed] = db.start_urls(1, "w1")
    assert db.start_urls(1, "w2") == [] and db.crawl_pending()  # w1's claim may add hosts
    db.finish(seed, CrawlResult(OK, 200, "http://seed.test/", ""), ["http://next.test/"])
    # The claim is gone and its link is due, seen in one snapshot: a worker whose
    # claim just came back empty must not call this drained.
    assert db.crawl_pending()
    [link] = db.start_urls(1, "w2")
    db.finish(link, CrawlResult(OK, 200, "http://next.test/", ""), [])
    assert not db.crawl_pending()


def test_a_claimed_host_that_became_an_entry_is_released(db):
    db.save_hosts(["flip.test"])
    assert db.start_urls(10, "w") == ["flip.test"]
    db.upsert_blocked("flip.test", "trap")
    db.take_out_of_routing("flip.test", "flip.test")  # its request was then denied
    db.unblock(["flip.test"])
    assert queue_row(db, "flip.test").claimed_by is None
    assert not db.crawl_pending()


def test_a_denied_host_is_due_at_once_when_its_entry_goes(db):
    db.save_hosts(["x.brief.test"])
    assert db.start_urls(10, "w", lease=timedelta(hours=1)) == ["x.brief.test"]
    db.add_no_follow(["brief.test"])
    db.take_out_of_routing("x.brief.test", "brief.test")
    db.remove_no_follow(["brief.test"])
    assert db.start_urls(10, "w") == ["x.brief.test"]  # not an hour later


def test_connections_notice_a_vanished_server(database_url):
    """Keepalives and a connect timeout on the engine's connections.

    A half-open TCP connection cannot be made on loopback without a packet filter,
    so this checks what libpq was told: it bounds how long a query can hang.
    """
    from crawler.db.engine import CONNECT_ARGS, get_engine

    with get_engine(database_url).connect() as conn:
        dsn = conn.connection.dbapi_connection.info.dsn
    for name, value in CONNECT_ARGS.items():
        assert f"{name}={value}" in dsn
