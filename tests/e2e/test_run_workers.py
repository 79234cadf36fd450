"""`make run` with CRAWL_WORKERS=2 (crawler/runner/supervisor.py): two named workers that both
claim hosts, a killed one restarted in its place with a back-off and said so, and a
clean stop that leaves nothing running and no worker counted alive."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys

import psutil
import pytest
from sqlalchemy import text

from crawler.db.server.engine import PROJECT_ROOT
from tests.e2e.conftest import KILLED, wait_until
from tests.e2e.test_run import STOP_TIMEOUT, unused_port
from tests.fakeweb import World

HOST = socket.gethostname()
ONE, TWO = f"worker-1@{HOST}", f"worker-2@{HOST}"


def start_run(web, tmp_path, seed: str, **settings) -> subprocess.Popen:
    """`python -m crawler.runner.run` on the test database, its output in tmp_path/run.log."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{seed}\n")
    env = {
        **os.environ,  # DATABASE_URL: the test database, so the test can read it too
        "HOST_URL_TEMPLATE": web.url_template("http"),
        "HTTP_FALLBACK_TEMPLATE": "",
        "DNS_NAMESERVERS": web.nameservers,
        "CLAIM_POLL_INTERVAL": "0.2",
        "HOSTCRAWL_VAR": str(tmp_path / "var"),  # the workers' logs: var/log/worker-N.log
        **settings,
    }
    command = [sys.executable, "-m", "crawler.runner.run", "--seeds", str(seeds)]
    return subprocess.Popen(
        [*command, "--bind", f"127.0.0.1:{unused_port()}"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=open(tmp_path / "run.log", "w"),  # noqa: SIM115 (the child owns it)
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def worker_rows(db) -> dict[str, tuple[int, int]]:
    """crawl_workers: name -> (pid, pages)."""
    with db.connect() as conn:
        rows = conn.execute(text("SELECT name, pid, pages FROM crawl_workers"))
        return {name: (pid, pages) for name, pid, pages in rows}


def claimers(db, seen: set[str]) -> set[str]:
    """Every worker name seen holding a claim so far (`seen` grows)."""
    with db.connect() as conn:
        held = "SELECT DISTINCT claimed_by FROM queue WHERE claimed_by IS NOT NULL"
        seen.update(conn.execute(text(held)).scalars())
    return seen


def stop(run: subprocess.Popen) -> int:
    run.send_signal(signal.SIGTERM)
    return run.wait(timeout=STOP_TIMEOUT)


@pytest.mark.one_server("`make run` supervises its workers on the embedded database")
@pytest.mark.refetches(KILLED)
def test_two_named_workers_claim_and_a_killed_one_comes_back(db, fakeweb_factory, tmp_path):
    world = World(seed=5, delay=0.5)
    names = world.graph(120, roots=[f"r{i}.test" for i in range(8)])
    web = fakeweb_factory(world)
    # Neither worker can take everything: each holds at most 2 hosts, one host of a root
    # at a time across workers (a worker that settles a host claims again at once: with
    # no cap of its own it would keep every root's slot). The killed worker's claims are taken
    # again once their short lease runs out.
    settings = {"ROOT_CONCURRENCY": "1", "MAX_IN_FLIGHT": "2", "CLAIM_LEASE": "10"}
    run = start_run(web, tmp_path, names[0], CRAWL_WORKERS="2", **settings)
    log = tmp_path / "run.log"
    try:
        seen: set[str] = set()
        wait_until(lambda: {ONE, TWO} <= claimers(db, seen), 120, "both workers to claim hosts")
        wait_until(lambda: {ONE, TWO} <= worker_rows(db).keys(), 60, "both heartbeats")
        counted = wait_until(  # each heartbeat counts its own worker's pages
            lambda: (rows := worker_rows(db)) and all(rows[n][1] > 0 for n in (ONE, TWO)),
            120,
            "both workers' pages counted",
        )
        assert counted
        old_pid = worker_rows(db)[ONE][0]
        children = psutil.Process(run.pid).children(recursive=True)
        assert old_pid in {c.pid for c in children}
        os.kill(old_pid, signal.SIGKILL)
        died = f"{ONE} (pid {old_pid}) died with exit code -9 (SIGKILL); restarting it in 1 s"
        wait_until(lambda: died in log.read_text(), 60, "the supervisor to say so")
        wait_until(lambda: worker_rows(db).get(ONE, (old_pid,))[0] != old_pid, 120, "worker-1 back")
        new_pid = worker_rows(db)[ONE][0]
        assert psutil.pid_exists(new_pid)
        wait_until(lambda: len(web.fetch_counts()) == len(names), 180, "every host crawled")
        children = psutil.Process(run.pid).children(recursive=True)
        assert stop(run) == 0
    finally:
        if run.poll() is None:
            stop(run)
    output = log.read_text()
    assert "2 crawler workers (CRAWL_WORKERS); every log in " in output
    assert f"supervisor: restarted {ONE} (pid {new_pid})" in output
    logs = {
        name: (tmp_path / "var" / "log" / f"{name.split('@')[0]}.log").read_text()
        for name in (ONE, TWO)
    }
    for name in (ONE, TWO):  # each worker's start line, and its name on its log lines
        assert re.search(
            rf"{re.escape(name)} \[crawler\.extensions\.heartbeat\] INFO: hostcrawl worker "
            rf"{re.escape(name)} started \(pid \d+ on ",
            logs[name],
        ), name
    assert logs[ONE].count(f"hostcrawl worker {ONE} started") == 2  # the first, the restart
    assert logs[TWO].count(f"hostcrawl worker {TWO} started") == 1  # never stopped
    assert "[scrapy" not in output  # Scrapy's logs are in the files, not on the console
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert worker_rows(db) == {}  # a clean stop: no worker left counted


@pytest.mark.one_server("`make run` supervises its workers on the embedded database")
def test_a_worker_that_drains_is_not_restarted(db, fakeweb_factory, tmp_path):
    world = World(seed=6)
    names = world.graph(10, roots=["alpha.test"])
    web = fakeweb_factory(world)
    run = start_run(web, tmp_path, names[0], CRAWL_WORKERS="2", CLOSE_WHEN_DRAINED="1")
    try:
        assert run.wait(timeout=STOP_TIMEOUT) == 0  # both drained, then the panel stopped
    finally:
        if run.poll() is None:
            stop(run)
    output = (tmp_path / "run.log").read_text()
    for name in (ONE, TWO):
        assert f"supervisor: {name} finished (exit code 0: nothing left to crawl)" in output
    assert "restarting it" not in output and "supervisor: restarted" not in output
    assert len(web.fetch_counts()) == len(names)
