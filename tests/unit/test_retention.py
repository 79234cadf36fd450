"""Retention: trap windows keep their size, old change-log rows and probes go, no orphans."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text

from crawler.core.links import FilteredLinks
from crawler.db import deny_entries, queue, retention, windows
from crawler.db.queue import Crawled, CrawlResult
from tests.unit.test_cli import hostcrawl

ORPHANS = (
    "SELECT h.hostname FROM hosts h"
    " WHERE NOT EXISTS (SELECT 1 FROM queue q WHERE q.hostname = h.hostname)"
)


def window_sizes(db) -> dict[str, int]:
    with db.connect() as conn:
        rows = conn.execute(text("SELECT root, count(*) FROM trap_window GROUP BY root"))
        return dict(rows.all())


def test_a_trap_window_keeps_at_most_its_size_per_root(db):
    windows.record_outcomes(db, [(f"s{i}.a.test", "OK") for i in range(8)], size=5)
    windows.record_outcomes(db, [(f"s{i}.b.test", "OK") for i in range(3)], size=5)
    assert window_sizes(db) == {"a.test": 5, "b.test": 3}
    for round_ in range(3):  # later writes still trim, keeping the newest
        windows.record_outcomes(db, [(f"r{round_}-{i}.a.test", "OK") for i in range(4)], size=5)
    assert window_sizes(db) == {"a.test": 5, "b.test": 3}
    kept = {o.hostname for o in windows.window(db, "a.test")}
    assert kept == {"r2-0.a.test", "r2-1.a.test", "r2-2.a.test", "r2-3.a.test", "r1-3.a.test"}


def add_aged(db, audit_days: list[int], probe_days: list[int]) -> None:
    """Audit rows and wildcard probes that many days old."""
    with db.begin() as conn:
        for i, days in enumerate(audit_days):
            conn.execute(
                text(
                    "INSERT INTO change_log (at, actor, action, hostname)"
                    " VALUES (now() - make_interval(days => :d), 'test', 'block', :h)"
                ),
                {"d": days, "h": f"a{i}.test"},
            )
        for i, days in enumerate(probe_days):
            conn.execute(
                text(
                    "INSERT INTO wildcard_probes (root, probe, outcome, checked_at)"
                    " VALUES (:r, :p, 'DNS_NXDOMAIN', now() - make_interval(days => :d))"
                ),
                {"d": days, "r": f"p{i}.test", "p": f"x.p{i}.test"},
            )


def ages(db, table: str, column: str) -> list[int]:
    with db.connect() as conn:
        query = f"SELECT extract(day FROM now() - {column})::int FROM {table} ORDER BY 1"
        return list(conn.execute(text(query)).scalars())


def test_prune_keeps_90_days_of_audit_and_30_of_probes_by_default(db, monkeypatch):
    add_aged(db, audit_days=[1, 30, 89, 91, 200, 400] * 2, probe_days=[2, 29, 31, 90])
    assert retention.prune(db, dry_run=True) == retention.Pruned(6, 2, 0)
    assert len(ages(db, "change_log", "at")) == 12  # a dry run deletes nothing
    monkeypatch.setattr(retention, "BATCH", 4)  # several batches
    assert retention.prune(db) == retention.Pruned(6, 2, 0)
    assert ages(db, "change_log", "at") == [1, 1, 30, 30, 89, 89]
    assert ages(db, "wildcard_probes", "checked_at") == [2, 29]
    assert retention.prune(db) == retention.Pruned(0, 0, 0)


def test_zero_days_keeps_everything_of_that_kind(db):
    add_aged(db, audit_days=[400], probe_days=[400])
    assert retention.prune(db, audit_days=0, probe_days=0) == retention.Pruned(0, 0, 0)
    assert retention.prune(db, audit_days=0, probe_days=10) == retention.Pruned(0, 1, 0)


def test_the_prune_command_and_its_settings(db, monkeypatch):
    add_aged(db, audit_days=[10, 100], probe_days=[40])
    run = hostcrawl("prune", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "change log: would delete 1 rows (older than 90 days)" in run.stdout
    assert "wildcard probes: would delete 1 (older than 30 days)" in run.stdout
    monkeypatch.setenv("CHANGE_LOG_RETENTION_DAYS", "5")
    run = hostcrawl("prune", "--probe-days", "0")
    assert "change log: deleted 2 rows (older than 5 days)" in run.stdout
    assert "wildcard probes: deleted 0 (none: all kept)" in run.stdout
    assert (
        ages(db, "change_log", "at") == [] and len(ages(db, "wildcard_probes", "checked_at")) == 1
    )
    refused = hostcrawl("prune", "--change-log-days", "-1")
    assert refused.returncode == 2 and refused.stderr.startswith("error: ")


def orphans(db) -> list[str]:
    with db.connect() as conn:
        return list(conn.execute(text(ORPHANS)).scalars())


def test_every_writer_keeps_hosts_and_queue_rows_paired(db):
    """hosts rows are referenced by their queue row: every way in makes both, the one
    way out (a removed entry's own row) takes both."""
    queue.save_hosts(db, ["a.test", "www.a.test"])
    queue.seed(db, ["seed.test"])
    page = FilteredLinks(hostnames={"new.test", "www.new.test", "a.test"}, found=3)
    queue.finish_many(db, [Crawled("a.test", CrawlResult("OK", 200), page, timedelta(days=1))])
    deny_entries.add_no_follow(db, ["rule.test", "www.a.test"])
    deny_entries.upsert_blocked(db, "trap.test", "a trap")
    deny_entries.remove_no_follow(db, ["rule.test"])  # an entry-only row: goes with its entry
    deny_entries.unblock(db, ["trap.test"])
    windows.record_outcomes(db, [("x.a.test", "DNS_NXDOMAIN")], size=50)
    with db.connect() as conn:
        known = set(conn.execute(text("SELECT hostname FROM hosts")).scalars())
    assert {"a.test", "www.a.test", "seed.test", "new.test", "www.new.test"} <= known
    assert "rule.test" not in known and "trap.test" not in known
    assert orphans(db) == []
    assert retention.prune(db).orphan_hosts == 0


def test_prune_deletes_a_hosts_row_left_without_its_queue_row(db):
    queue.save_hosts(db, ["a.test", "b.test"])
    with db.begin() as conn:
        conn.execute(text("DELETE FROM queue WHERE hostname = 'b.test'"))  # by hand
    assert orphans(db) == ["b.test"]
    assert retention.prune(db, dry_run=True).orphan_hosts == 1
    assert retention.prune(db).orphan_hosts == 1
    assert orphans(db) == []
    with db.connect() as conn:
        assert list(conn.execute(text("SELECT hostname FROM hosts")).scalars()) == ["a.test"]


def test_prune_keeps_two_hours_of_per_root_claim_counts(db):
    """Only the rolling hour is read (the root's budget); older counts go, whatever the
    retention settings."""
    with db.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO root_claims (root, minute, claimed) VALUES"
                " ('a.test', date_trunc('minute', now()) - interval '3 hours', 5),"
                " ('a.test', date_trunc('minute', now()) - interval '30 minutes', 7),"
                " ('b.test', date_trunc('minute', now()) - interval '1 day', 1)"
            )
        )
    assert retention.prune(db, audit_days=0, probe_days=0, dry_run=True).root_claims == 2
    assert retention.prune(db, audit_days=0, probe_days=0).root_claims == 2
    with db.connect() as conn:
        left = conn.execute(text("SELECT root, claimed FROM root_claims")).all()
    assert [tuple(r) for r in left] == [("a.test", 7)]
