"""Retention on both deployments, one code path: every kind pruned in bounded batches by
its key, on one server and on a Citus cluster (which runs no delete by ctid on a
distributed table). Skips the cluster case with one line without `make citus`."""

from __future__ import annotations

from sqlalchemy import text

from crawler.db.crawl import queue, retention
from crawler.db.rules import trap_windows

ROOTS = [f"r{i}.test" for i in range(10)]
AGED = [
    # Old rows past each default rule, beside new ones that stay.
    "INSERT INTO wildcard_probes (root, probe, outcome, checked_at)"
    " SELECT 'p' || i || '.test', 'x.p' || i || '.test', 'DNS_NXDOMAIN',"
    " now() - make_interval(days => CASE WHEN i <= 5 THEN 40 ELSE 1 END)"
    " FROM generate_series(1, 8) i",
    "INSERT INTO root_claims (root, minute, claimed)"
    " SELECT 'r' || i || '.test', date_trunc('minute', now()) - make_interval(mins => m), 1"
    " FROM generate_series(0, 9) i, unnest(ARRAY[1, 120]) m",
    "INSERT INTO trap_deferrals (root, why, checked_at)"
    " SELECT 'r' || i || '.test', 'held back',"
    " now() - make_interval(days => CASE WHEN i < 7 THEN 10 ELSE 1 END)"
    " FROM generate_series(0, 9) i",
    "INSERT INTO change_log (at, actor, action, hostname)"
    " SELECT now() - make_interval(days => CASE WHEN i <= 6 THEN 100 ELSE 1 END),"
    " 'test', 'block', 'a.test' FROM generate_series(1, 9) i",
    # Every root's first subdomain seen 40 days ago: it leaves its window.
    "UPDATE trap_window SET seen_at = now() - interval '40 days' WHERE hostname LIKE 's0.%'",
]


def counts(engine) -> dict[str, int]:
    tables = ("wildcard_probes", "root_claims", "trap_deferrals", "change_log", "trap_window")
    with engine.connect() as conn:
        found = {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}
        found["hosts"] = conn.execute(text("SELECT count(*) FROM hosts")).scalar_one()
    return found


def test_every_kind_is_pruned_in_batches_on_both_deployments(either, monkeypatch):
    engine = either
    names = [f"s{i}.{domain}" for i in range(3) for domain in ROOTS]
    queue.save_hosts(engine, names)
    trap_windows.record_outcomes(engine, [(name, "DNS_NXDOMAIN") for name in names], 50)
    with engine.begin() as conn:
        for statement in AGED:
            conn.execute(text(statement))
    expected = retention.Pruned(
        change_log=6,
        wildcard_probes=5,
        root_claims=10,
        trap_window=10,
        trap_deferrals=7,
    )
    assert retention.prune(engine, dry_run=True) == expected
    monkeypatch.setattr(retention, "BATCH", 3)  # several batches of every kind

    assert retention.prune(engine) == expected

    assert counts(engine) == {
        "wildcard_probes": 3,
        "root_claims": 10,
        "trap_deferrals": 3,
        "change_log": 3,
        "trap_window": 20,
        "hosts": 30,
    }
    with engine.connect() as conn:
        kept = conn.execute(text("SELECT root, hosts, window_size, window_failed FROM roots"))
        assert sorted(kept.all()) == [(domain, 3, 2, 2) for domain in ROOTS]
    assert retention.prune(engine) == retention.Pruned()
