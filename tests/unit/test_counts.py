"""The dashboard's totals: counted on a small database, the planner's estimates on a big one.

A big database is made small here by lowering EXACT_BELOW: the estimates come
from the same statistics ANALYZE keeps at any size.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import insert_hosts
from webpanel.queries import dashboard

pytest_plugins = ["tests.unit.test_panel_support"]

OK_HOSTS = 2_000
NEW_HOSTS = 1_000


@pytest.fixture
def corpus(db):
    """2,000 crawled hosts (due in a week), 1,000 never crawled (due now), 20 entries."""
    crawled = datetime.now(UTC) - timedelta(days=2)
    insert_hosts(db, [f"h{i}.ok.test" for i in range(OK_HOSTS)], outcome="OK")
    with db.begin() as conn:
        conn.execute(
            text("UPDATE hosts SET last_crawled_at = :at WHERE outcome = 'OK'"), {"at": crawled}
        )
        conn.execute(text("UPDATE hosts SET next_claim_at = now() + interval '5 days'"))
    insert_hosts(db, [f"h{i}.new.test" for i in range(NEW_HOSTS)])
    deny_entries.add_no_follow(db, [f"rule{i}.test" for i in range(20)])
    with db.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        # and the visibility map, as autovacuum keeps them: the counts of due and hidden
        # rows are index-only, and read no host
        conn.execute(text("VACUUM ANALYZE hosts"))
    return db


def hosts_rows_read(conn) -> int:
    """Rows of hosts this backend read that are not flushed to the statistics yet (in one
    transaction, a difference of two readings is what happened between them)."""
    return conn.execute(
        text(
            "SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables"
            " WHERE relname = 'hosts'"
        )
    ).scalar_one()


def test_a_small_database_is_counted_exactly(corpus):
    with corpus.connect() as conn:
        figures = dashboard.totals(conn)
    assert figures["estimated"] is False
    assert figures["hosts_known"] == OK_HOSTS + NEW_HOSTS  # not the 20 entries
    assert figures["due_now"] == NEW_HOSTS
    assert dict(figures["outcomes"]) == {"OK": OK_HOSTS, None: NEW_HOSTS}
    assert figures["no_follow"] == 20


def test_a_big_database_is_estimated_reading_only_the_hidden_hosts(corpus, monkeypatch):
    monkeypatch.setattr(dashboard, "EXACT_BELOW", 1_000)
    with corpus.connect() as conn:
        before = hosts_rows_read(conn)
        figures = dashboard.totals(conn)
        # no count(*) over hosts: only the hidden rows' own (the 20 entries) are read
        assert hosts_rows_read(conn) - before == 20
        exact = dashboard.exact_totals(conn, dashboard.hidden_figures(conn, datetime.now(UTC)))
        assert hosts_rows_read(conn) > before + OK_HOSTS  # what the check above would see
    assert figures["estimated"] is True
    assert figures["hosts_known"] == pytest.approx(OK_HOSTS + NEW_HOSTS, rel=0.05)
    assert figures["due_now"] == pytest.approx(NEW_HOSTS, rel=0.2)
    outcomes = dict(figures["outcomes"])
    assert outcomes["OK"] == pytest.approx(OK_HOSTS, rel=0.1)
    assert outcomes[None] == pytest.approx(NEW_HOSTS, rel=0.1)
    assert figures["no_follow"] == exact["no_follow"] == 20  # few: always counted


def test_the_strip_marks_estimates_and_says_why(client, corpus, monkeypatch):
    monkeypatch.setattr(dashboard, "EXACT_BELOW", 1_000)
    html = client.get("/").get_data(as_text=True)
    known = re.search(r'<dd id="stat-hosts">([^<]+)</dd>', html).group(1)
    assert known.startswith("≈ ") and int(known[2:].replace(",", "")) > 2_800
    assert "the database's own estimate" in html
    monkeypatch.setattr(dashboard, "EXACT_BELOW", 10**9)
    html = client.get("/").get_data(as_text=True)
    assert re.search(r'<dd id="stat-hosts">3,000</dd>', html)
