"""`make demo` is a sandbox, run for real: the demo crawls its own fake internet in a
database of its own and leaves the operator's database (DATABASE_URL's) untouched."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from crawler.db.server.engine import embedded_server_url, get_engine
from tests.fakeweb.handle import PROJECT_ROOT

DEMO_BOUND = 300  # seconds: the demo's own crawl is bounded at 120


def snapshot(engine) -> tuple:
    with engine.connect() as conn:
        hosts = conn.execute(text("SELECT * FROM hosts ORDER BY hostname")).all()
        routing = conn.execute(text("SELECT * FROM queue ORDER BY hostname")).all()
        window = conn.execute(text("SELECT count(*) FROM trap_window")).scalar()
    return hosts, routing, window


@pytest.mark.one_server("`make demo` runs its own embedded database")
def test_make_demo_leaves_the_operators_database_untouched(db, database_url, tmp_path):
    queue.seed(db, ["alpha.test", "python.org"])  # the operator's own queue, due now
    before = snapshot(db)
    env = {**os.environ, "DATABASE_URL": database_url, "DEMO_NO_SERVE": "1"}
    env["HOSTCRAWL_VAR"] = str(tmp_path / "var")

    demo = subprocess.run(
        [sys.executable, "-m", "tests.fakeweb.demo"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        stdin=subprocess.DEVNULL,  # no terminal: no prompt for an operator, only how
        text=True,
        timeout=DEMO_BOUND,
    )

    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert f"the demo's own, embedded in {tmp_path / 'var' / 'demo' / 'pg'}" in demo.stdout
    assert "stdin is not a terminal, so no prompt: create one with DATABASE_URL=" in demo.stdout
    assert snapshot(db) == before
    assert deny_entries.list_entries(db, "blocked") == []
    own = get_engine(embedded_server_url(tmp_path / "var" / "demo" / "pg"))
    try:
        with own.connect() as conn:
            ok = conn.execute(text("SELECT count(*) FROM hosts WHERE outcome = 'OK'")).scalar()
        assert ok > 0
        assert [e["hostname"] for e in deny_entries.list_entries(own, "blocked")] == ["trap.test"]
    finally:
        own.dispose()


CRAWLED_FIGURES = text(
    "SELECT (SELECT count(*) FROM hosts WHERE last_crawled_at IS NOT NULL) AS hosts,"
    " (SELECT sum(crawled) FROM host_minutes) AS minutes,"
    " (SELECT sum(ok + http + network + ignored) FROM host_hours) AS hours,"
    " (SELECT sum(hosts) FROM roots) AS in_roots, (SELECT count(*) FROM hosts) AS known"
)


@pytest.mark.one_server("`make demo` runs its own embedded database")
def test_a_second_demo_starts_its_figures_from_zero(tmp_path):
    """Issue 53: a second demo's panel said "failed, last 5 min 46% of 226" after a crawl
    of 113 hosts, the first demo's minutes kept. Each figure of the second is its own."""
    env = {**os.environ, "DEMO_NO_SERVE": "1", "HOSTCRAWL_VAR": str(tmp_path / "var")}
    runs = [
        subprocess.run(
            [sys.executable, "-m", "tests.fakeweb.demo"],
            cwd=PROJECT_ROOT,
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=DEMO_BOUND,
        )
        for _ in range(2)
    ]
    for demo in runs:
        assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "and its figures" in runs[1].stdout
    own = get_engine(embedded_server_url(tmp_path / "var" / "demo" / "pg"))
    try:
        with own.connect() as conn:
            figures = conn.execute(CRAWLED_FIGURES).one()
    finally:
        own.dispose()
    assert figures.hosts > 0
    assert figures.minutes == figures.hours == figures.hosts  # the second crawl's alone
    assert figures.in_roots == figures.known
