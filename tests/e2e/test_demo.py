"""`make demo` is a sandbox, run for real: the demo crawls its own fake internet in a
database of its own and leaves the operator's database (DATABASE_URL's) untouched; its
panel's address and login come once the panel answers, and work; it says it stopped."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
import requests
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from crawler.db.server.engine import embedded_server_url, get_engine
from tests.e2e.test_run import healthz, unused_port
from tests.fakeweb.handle import PROJECT_ROOT
from tests.unit.test_demo_sandbox import run_demo
from tests.waiting import wait_until

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

    demo = run_demo(env, timeout=DEMO_BOUND)  # no terminal: no prompt for an operator

    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert f"the demo's own, embedded in {tmp_path / 'var' / 'demo' / 'pg'}" in demo.stdout
    # No terminal, no operator anywhere: one made, never a command that fails later.
    assert "operator demo made in the demo's database" in demo.stdout
    assert "user create" not in demo.stdout
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


@pytest.mark.one_server("`make demo` runs its own embedded database")
def test_the_demo_says_its_address_and_login_once_its_panel_answers(tmp_path):
    port = unused_port()
    env = {**os.environ, "DEMO_BIND": f"127.0.0.1:{port}"}
    env["HOSTCRAWL_VAR"] = str(tmp_path / "var")
    env.pop("DATABASE_URL", None)  # make run's database: none yet under this var/
    said = tmp_path / "demo.out"
    demo = subprocess.Popen(
        [sys.executable, "-m", "tests.fakeweb.demo"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=open(said, "w"),  # noqa: SIM115 (the child owns it)
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: "The panel is ready" in said.read_text(), DEMO_BOUND, "the address")
        assert healthz(port) == 200  # said once it answers, not before
        login = re.search(r"log in as demo, password (\S+)", said.read_text())
        assert login, said.read_text()
        session = requests.Session()
        form = session.get(f"http://127.0.0.1:{port}/login", timeout=10).text
        token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', form).group(1)
        answer = session.post(
            f"http://127.0.0.1:{port}/login",
            data={"csrf_token": token, "username": "demo", "password": login.group(1)},
            timeout=10,
        )
        assert answer.ok and '<span class="who">demo</span>' in answer.text, answer.text[-2000:]
        demo.send_signal(signal.SIGTERM)
        assert demo.wait(timeout=60) == 0
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    output = said.read_text()
    assert output.rstrip().endswith("stopped: the panel and the fake internet"), output[-1000:]
    assert "user create" not in output
    assert healthz(port) is None


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
    runs = [run_demo(env, timeout=DEMO_BOUND) for _ in range(2)]
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
