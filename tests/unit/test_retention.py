"""Retention: every table that grows with time is pruned, by hand and on a schedule, one
process at a time, in batches; trap windows keep their size."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler
from sqlalchemy import event, text

from crawler.addon import HostcrawlAddon
from crawler.core.links import FilteredLinks
from crawler.db.crawl import queue, retention
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import deny_entries, trap_windows
from crawler.extensions.pruning import ScheduledPrune
from tests.loops import run as run_in_loop
from tests.unit.test_cli import hostcrawl


def window_sizes(db) -> dict[str, int]:
    with db.connect() as conn:
        rows = conn.execute(text("SELECT root, count(*) FROM trap_window GROUP BY root"))
        return dict(rows.all())


def test_a_trap_window_keeps_at_most_its_size_per_root(db):
    trap_windows.record_outcomes(db, [(f"s{i}.a.test", "OK") for i in range(8)], size=5)
    trap_windows.record_outcomes(db, [(f"s{i}.b.test", "OK") for i in range(3)], size=5)
    assert window_sizes(db) == {"a.test": 5, "b.test": 3}
    for round_ in range(3):  # later writes still trim, keeping the newest
        trap_windows.record_outcomes(
            db, [(f"r{round_}-{i}.a.test", "OK") for i in range(4)], size=5
        )
    assert window_sizes(db) == {"a.test": 5, "b.test": 3}
    kept = {o.hostname for o in trap_windows.window(db, "a.test")}
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
    assert retention.prune(
        db, retention.Rules(change_log=0, wildcard_probes=0)
    ) == retention.Pruned(0, 0, 0)
    assert retention.prune(
        db, retention.Rules(change_log=0, wildcard_probes=10)
    ) == retention.Pruned(0, 1, 0)


def test_the_prune_command_and_its_settings(db, monkeypatch):
    add_aged(db, audit_days=[10, 100], probe_days=[40])
    run = hostcrawl("prune", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "change log rows: would delete 1 (older than 90 days)" in run.stdout
    assert "wildcard probes: would delete 1 (older than 30 days)" in run.stdout
    monkeypatch.setenv("CHANGE_LOG_RETENTION_DAYS", "5")
    run = hostcrawl("prune", "--probe-days", "0")
    assert "change log rows: deleted 2 (older than 5 days)" in run.stdout
    assert "wildcard probes: deleted 0 (none: all kept)" in run.stdout
    assert (
        ages(db, "change_log", "at") == [] and len(ages(db, "wildcard_probes", "checked_at")) == 1
    )
    refused = hostcrawl("prune", "--change-log-days", "-1")
    assert refused.returncode == 2 and refused.stderr.startswith("error: ")


def test_an_entry_only_row_goes_with_its_entry_and_every_host_stays(db):
    """Every way in makes a host's one row; the one way out is a removed entry's own row
    (never routed, crawled or audited)."""
    queue.save_hosts(db, ["a.test", "www.a.test"])
    queue.seed(db, ["seed.test"])
    page = FilteredLinks.of(["new.test", "www.new.test", "a.test"])
    queue.finish_many(db, [Crawled("a.test", CrawlResult("OK", 200), page, timedelta(days=1))])
    deny_entries.add_no_follow(db, ["rule.test", "www.a.test"])
    deny_entries.upsert_blocked(db, "trap.test", "a trap")
    deny_entries.remove_no_follow(db, ["rule.test"])  # an entry-only row: goes with its entry
    deny_entries.unblock(db, ["trap.test"])
    trap_windows.record_outcomes(db, [("x.a.test", "DNS_NXDOMAIN")], size=50)
    with db.connect() as conn:
        known = set(conn.execute(text("SELECT hostname FROM hosts")).scalars())
        in_queue = set(conn.execute(text("SELECT hostname FROM queue")).scalars())
    assert {"a.test", "www.a.test", "seed.test", "new.test", "www.new.test"} <= known
    assert "rule.test" not in known and "trap.test" not in known
    assert in_queue == known  # the queue is a view of the same rows


def test_prune_keeps_65_minutes_of_per_root_claim_counts(db):
    """Only the rolling hour is read (the root's budget): older counts go by default."""
    with db.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO root_claims (root, minute, claimed) VALUES"
                " ('a.test', date_trunc('minute', now()) - interval '70 minutes', 5),"
                " ('a.test', date_trunc('minute', now()) - interval '61 minutes', 7),"
                " ('b.test', date_trunc('minute', now()) - interval '1 day', 1)"
            )
        )
    assert (
        retention.prune(
            db, retention.Rules(change_log=0, wildcard_probes=0), dry_run=True
        ).root_claims
        == 2
    )
    assert retention.prune(db, retention.Rules(change_log=0, wildcard_probes=0)).root_claims == 2
    with db.connect() as conn:
        left = conn.execute(text("SELECT root, claimed FROM root_claims")).all()
    assert [tuple(r) for r in left] == [("a.test", 7)]


def aged_rows(db, days: int) -> None:
    """One row `days` old in each table pruned by days, and a change with its items."""
    ago = {"ago": days}
    statements = [
        "INSERT INTO change_log (id, at, actor, action, hostname, detail) VALUES"
        " (9000 + :ago, now() - make_interval(days => :ago), 'cli', 'no_follow', 'x.test', '2')",
        "INSERT INTO change_log_items (change_id, names, details)"
        " VALUES (9000 + :ago, ARRAY['a.test', 'b.test'], ARRAY[NULL, NULL]::text[])",
        "INSERT INTO host_hours (hour, shard, discovered)"
        " VALUES (date_trunc('hour', now()) - make_interval(days => :ago), 0, 3)",
        "INSERT INTO trap_deferrals (root, why, since, checked_at) VALUES"
        " ('d' || :ago || '.test', 'no canary', now() - make_interval(days => :ago),"
        "  now() - make_interval(days => :ago))",
    ]
    with db.begin() as conn:
        for statement in statements:
            conn.execute(text(statement), ago)
        conn.execute(
            text(
                "UPDATE trap_window SET seen_at = now() - make_interval(days => :ago)"
                " WHERE seen_at > now() - interval '1 hour'"
            ),
            ago,
        )


def table_counts(db) -> dict[str, int]:
    tables = ("change_log", "change_log_items", "host_hours", "trap_window", "trap_deferrals")
    with db.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}


def test_every_table_that_grows_with_time_has_its_rule(db):
    queue.save_hosts(db, ["w.test"])
    trap_windows.record_outcomes(db, [(f"s{i}.w.test", "DNS_NXDOMAIN") for i in range(3)], size=50)
    aged_rows(db, 100)  # past every default
    trap_windows.record_outcomes(db, [("fresh.w.test", "DNS_NXDOMAIN")], size=50)
    aged_rows(db, 1)  # within every default
    before = table_counts(db)
    pruned = retention.prune(db)
    assert (pruned.change_log, pruned.host_hours, pruned.trap_window) == (1, 1, 3)
    assert pruned.trap_deferrals == 1
    assert table_counts(db) == {
        "change_log": before["change_log"] - 1,
        "change_log_items": before["change_log_items"] - 1,  # with its change
        "host_hours": before["host_hours"] - 1,
        "trap_window": 1,
        "trap_deferrals": before["trap_deferrals"] - 1,
    }
    with db.connect() as conn:  # the root's window counts follow its rows
        size = conn.execute(text("SELECT window_size FROM roots WHERE root = 'w.test'"))
        assert size.scalar_one() == 1


def test_each_rule_follows_its_setting(db, monkeypatch):
    aged_rows(db, 10)
    for name in ("HOST_HOURS_RETENTION_DAYS", "DEFERRAL_RETENTION_DAYS"):
        monkeypatch.setenv(name, "5")
    rules = retention.Rules.from_environment()
    assert (rules.host_hours, rules.trap_deferrals, rules.change_log) == (5, 5, 90)
    assert retention.prune(db, rules, dry_run=True) == retention.Pruned(
        host_hours=1, trap_deferrals=1
    )
    monkeypatch.setenv("ROOT_CLAIMS_RETENTION_MINUTES", "60")  # the budget reads 61
    refused = hostcrawl("prune", "--dry-run")
    assert refused.returncode == 1
    assert (
        refused.stderr.strip()
        == "error: ROOT_CLAIMS_RETENTION_MINUTES='60': expected a number >= 61"
    )


def deletes_of(db, monkeypatch, batch: int) -> list[tuple[str, int]]:
    """(table, rows) of each DELETE of a prune, BATCH set to `batch`."""
    monkeypatch.setattr(retention, "BATCH", batch)
    seen: list[int] = []

    def record(conn, cursor, statement, params, context, executemany):
        if statement.startswith("DELETE"):
            seen.append((statement.split()[2], cursor.rowcount))

    event.listen(db, "after_cursor_execute", record)
    try:
        retention.prune(db)
    finally:
        event.remove(db, "after_cursor_execute", record)
    return seen


def test_prunes_go_in_small_batches(db, monkeypatch):
    add_aged(db, audit_days=[100] * 10, probe_days=[])
    deletes = deletes_of(db, monkeypatch, 4)
    assert [n for table, n in deletes if table == "change_log"] == [4, 4, 2]
    assert ages(db, "change_log", "at") == []


def test_two_processes_never_prune_at_once(db):
    add_aged(db, audit_days=[100, 100], probe_days=[])
    with db.connect() as other:  # another process, in the middle of a batch
        other.execute(text("SELECT pg_advisory_lock(:k)"), {"k": retention.LOCK_KEY})
        assert retention.scheduled(db, retention.Rules()) is None  # skips its turn
        assert len(ages(db, "change_log", "at")) == 2
        other.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": retention.LOCK_KEY})
        other.commit()
    assert retention.scheduled(db, retention.Rules()) == retention.Pruned(change_log=2)


def scheduled_prune(interval: int) -> ScheduledPrune:
    crawler = get_crawler(Spider, {"ADDONS": {HostcrawlAddon: 0}, "PRUNE_INTERVAL": interval})
    crawler._apply_settings()
    return next(e for e in crawler.extensions.middlewares if isinstance(e, ScheduledPrune))


def test_the_addon_installs_the_schedule_and_0_turns_it_off(db):
    assert scheduled_prune(600).interval == 600
    assert scheduled_prune(600).rules == retention.Rules()
    crawler = get_crawler(Spider, {"PRUNE_INTERVAL": 0})
    with pytest.raises(NotConfigured):
        ScheduledPrune.from_crawler(crawler)


def test_the_schedule_prunes_while_the_crawl_runs(db):
    add_aged(db, audit_days=[1, 100, 100], probe_days=[100])
    extension = scheduled_prune(1)

    async def until_pruned():
        extension.open(Spider("probe"))
        try:
            for _ in range(200):  # bounded: a few turns of a 1-second schedule
                await asyncio.sleep(0.05)
                if extension.crawler.stats.get_value("hostcrawl/retention/runs"):
                    return
        finally:
            await extension.close(None)

    run_in_loop(until_pruned())
    assert extension.crawler.stats.get_value("hostcrawl/retention/deleted") == 3
    assert ages(db, "change_log", "at") == [1]
    assert ages(db, "wildcard_probes", "checked_at") == []
