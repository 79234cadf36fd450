"""Plans that survive bulk changes: a bulk write that changes a large share of a table
analyzes it, and the export and the main list probe the deny entries by index even
when the statistics predate a big block list."""

from __future__ import annotations

from unittest import mock

import pytest
from sqlalchemy import text
from sqlalchemy.dialects import postgresql

from crawler.db.deployments import ONE_SERVER, deployment_of
from crawler.db.operators import bulk
from crawler.db.operators.export import export_statement
from crawler.db.operators.host_filter import HostFilter
from crawler.db.rules import deny_entries
from crawler.db.server import statistics
from webpanel.queries.host_rows import host_statement

HOSTS = 2_000
ENTRIES = 3_000


def analyses(db) -> dict[str, int]:
    with db.connect() as conn:
        rows = conn.execute(
            text("SELECT relname, analyze_count FROM pg_stat_user_tables WHERE relname = 'hosts'")
        )
        return dict(rows.all())


def believed_rows(db, table: str) -> float:
    with db.connect() as conn:
        return statistics.believed_rows(conn, table)


def hosts(n: int) -> list[str]:
    return [f"h{i}.d{i % 97}.test" for i in range(n)]


def test_a_large_bulk_write_analyzes_what_it_changed(db):
    before = analyses(db)
    bulk.collect(bulk.seed(db, hosts(HOSTS)))
    after = analyses(db)
    assert after["hosts"] > before["hosts"]
    assert believed_rows(db, "hosts") == HOSTS
    deny_entries.add_no_follow(db, [f"e{i}.entry.test" for i in range(ENTRIES)])
    assert believed_rows(db, "hosts") == HOSTS + ENTRIES  # the entries' rows are known


@pytest.mark.parametrize(
    ("changed", "rows", "large"),
    [(999, 0, False), (1_000, 0, True), (5_000, 100_000, False), (10_000, 100_000, True)],
)
def test_what_share_is_large(changed, rows, large):
    assert statistics.large_share(changed, rows) is large


@pytest.fixture
def stale(either):
    """2,000 queued hosts, analyzed; then 3,000 no_follow entries (200 over queued hosts)
    with the bulk write's ANALYZE off, and autovacuum's too (on a busy machine it may
    analyze hosts at any moment): the planner believes there are no entries. On one
    server, then on the cluster (where each shard's planner believes its own)."""
    db = either
    names = hosts(HOSTS)
    bulk.collect(bulk.seed(db, names))
    autovacuum(db)
    entries = [f"d{i}.test" for i in range(0, 97, 10)] + [f"e{i}.x.test" for i in range(ENTRIES)]
    with mock.patch.object(statistics, "analyze_after_bulk_write", lambda *a, **k: []):
        deny_entries.add_no_follow(db, entries[:ENTRIES])
    assert believed_rows(db, "hosts") == HOSTS
    covered = {f"d{i}.test" for i in range(0, 97, 10)}
    yield db, sorted(n for n in names if n.split(".", 1)[1] not in covered)
    autovacuum(db, "RESET (autovacuum_enabled)")


def autovacuum(db, option: str = "SET (autovacuum_enabled = false)") -> None:
    with db.begin() as conn:
        conn.execute(text(f"ALTER TABLE hosts {option}"))


def plan_nodes(db, statement) -> list[dict]:
    """The plan's nodes; through Citus, with those of the task it shows (on its worker)."""
    sql = statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    with db.connect() as conn:
        plan = conn.execute(text(f"EXPLAIN (FORMAT JSON) {sql}")).scalar_one()[0]["Plan"]
    nodes, stack = [], [plan]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.get("Plans", []))
        for task in node.get("Distributed Query", {}).get("Job", {}).get("Tasks", []):
            stack.extend(step["Plan"] for steps in task["Remote Plan"] for step in steps)
    return nodes


def statement_on(db, make):
    with db.connect() as conn:
        return make(deployment_of(conn))


@pytest.mark.parametrize(
    "make",
    [
        lambda found: export_statement(HostFilter(), found),
        lambda found: host_statement(HostFilter(), deployment=found),
        lambda found: host_statement(HostFilter(sort="newest"), deployment=found),
        lambda found: host_statement(HostFilter(outcome="none"), deployment=found),
    ],
    ids=["export", "list", "list newest", "list never crawled"],
)
def test_the_deny_test_is_index_probes_whatever_the_statistics(stale, make):
    db, _ = stale
    nodes = plan_nodes(db, statement_on(db, make))
    entries = [n for n in nodes if n.get("Alias") == "d"]
    assert entries, "the plan looks no entry up"
    assert {n["Node Type"] for n in entries} <= {"Index Scan", "Index Only Scan"}
    # Probes, a name at a time: an entries scan read once and compared with every name
    # (a Materialize, or a scan with no Index Cond) is what stale statistics once chose.
    assert all(n.get("Index Cond") for n in entries), entries
    assert all(n["Node Type"] != "Materialize" for n in nodes)
    if deployment_of(db) == ONE_SERVER:  # an index over the entries keyed by anything
        # but the name reads them all a probe (the cluster's pins the root: its shard's)
        assert all("hostname" in n["Index Cond"] for n in entries), entries


def test_the_entries_have_one_index_of_their_own(either):
    """The deny test's probe can take any index over the entries alone; statistics that
    predate a big block list cost them all the same (the planner believes none is there).
    A second one, keyed by the rule, once read all 100,000 entries a probe: the export
    wrote 5,000 lines a minute (bench/_stale_statistics.py, migration 0027)."""
    with either.connect() as conn:
        keys = conn.execute(
            text(
                "SELECT a.attname FROM pg_index i"
                " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]"
                " WHERE i.indrelid = 'hosts'::regclass"
                " AND pg_get_expr(i.indpred, i.indrelid) = '(status_reason IS NOT NULL)'"
            )
        )
        assert keys.scalars().all() == ["hostname"]


def test_the_export_with_stale_statistics_is_the_list(stale):
    db, shown = stale
    statement = statement_on(db, lambda found: export_statement(HostFilter(), found))
    with db.connect() as conn:
        exported = conn.execute(statement).scalars().all()
    assert exported == shown
