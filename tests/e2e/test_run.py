"""`make run` (crawler/runner/run.py) on a fresh var/: the embedded database, migrations, the
seeds, the crawler and the panel side by side; one Ctrl-C, or one SIGTERM (what
supervisors and `docker stop` send), stops them all, then the database."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import psutil
import pytest

from crawler.db.server.engine import PROJECT_ROOT
from tests.e2e.conftest import wait_until
from tests.fakeweb import World

STOP_TIMEOUT = 90


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def healthz(port: int) -> int | None:
    """The panel's /healthz status, or None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def ignore_stop_signals() -> None:
    """What a script's background job (`cmd &`) or a nohup'ed start inherits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def start_make_run(web, tmp_path, seeds: str, port: int) -> subprocess.Popen:
    """`python -m crawler.runner.run` as `make run` starts it, with var/ in tmp_path."""
    seeds_file = tmp_path / "seeds.txt"
    seeds_file.write_text(seeds)
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    env.update(
        HOSTCRAWL_VAR=str(tmp_path / "var"),
        HOST_URL_TEMPLATE=web.url_template(),
        DNS_NAMESERVERS=web.nameservers,
        CLAIM_POLL_INTERVAL="0.2",
    )
    command = [sys.executable, "-m", "crawler.runner.run", "--seeds", str(seeds_file)]
    return subprocess.Popen(
        [*command, "--bind", f"127.0.0.1:{port}", "--progress-every", "2"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=open(tmp_path / "run.log", "w"),  # noqa: SIM115 (the child owns it)
        stderr=subprocess.STDOUT,
        start_new_session=True,  # as from a terminal: the SIGINT reaches run.py only
    )


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_make_run_crawls_serves_the_panel_and_stops_on_one_signal(fakeweb_factory, tmp_path, stop):
    world = World(seed=13)
    names = world.graph(30, roots=["alpha.test"])
    web = fakeweb_factory(world)
    port = unused_port()
    seeds = f"# where to start\n{names[0]}\nbad..test\n"
    run = start_make_run(web, tmp_path, seeds, port)
    try:
        wait_until(lambda: healthz(port) == 200, 120, "the panel to answer")
        wait_until(lambda: len(web.fetch_counts()) == len(names), 120, "every host crawled")
        progress = re.compile(rf"progress: \d+ workers? alive, {len(names)} pages \(")
        wait_until(
            lambda: progress.search((tmp_path / "run.log").read_text()),
            60,
            "a progress line counting every page",
        )
        children = psutil.Process(run.pid).children(recursive=True)  # scrapy, gunicorn, ...
        assert len(children) >= 3, children  # the crawler, gunicorn's master and a worker
        run.send_signal(stop)
        assert run.wait(timeout=STOP_TIMEOUT) == 0
    finally:
        if run.poll() is None:
            run.send_signal(signal.SIGINT)  # it stops its children
            run.wait(timeout=STOP_TIMEOUT)
    output = (tmp_path / "run.log").read_text()
    assert "'bad..test'" in output and "empty label" in output  # a bad line, named, and why...
    assert "some seeds were refused" in output  # ...and the crawl went on without it
    assert_a_quiet_console(output, tmp_path / "var" / "log", port)
    assert "Control socket" not in output  # gunicorn.conf.py: no management socket in $HOME
    # Said once everything has stopped, not only "supervisor: stopping…".
    assert "supervisor: stopped worker-1@" in output and " and the panel\n" in output
    assert output.endswith("stopped: every worker, the panel and the embedded database\n")
    assert healthz(port) is None, "the panel is still serving"
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    pid_file = tmp_path / "var" / "pg" / "postmaster.pid"
    wait_until(lambda: not pid_file.exists(), 30, "the embedded database to stop")


def assert_a_quiet_console(output: str, logs, port: int) -> None:
    """Where the logs are, the panel's address once it answers, how to create the first
    operator with a command that works, progress lines; Scrapy's logs only in the files."""
    assert f"every log in {logs}/ (worker-1.log" in output
    # The embedded server's sizes, in one line (the tests size it for 512 MB: conftest).
    sized = "embedded Postgres sized for 512 MB (EMBEDDED_DATABASE_MEMORY_MB): shared_buffers"
    assert output.count(sized) == 1
    assert output.count(f"panel: http://127.0.0.1:{port}/ is ready") == 1
    assert output.index("is ready") < output.index("progress: ")
    command = output.split("no operator yet: create one with ")[1].split(" user create NAME")[0]
    usage = subprocess.run([*command.split(), "user", "create", "--help"], capture_output=True)
    assert usage.returncode == 0 and b"Create operator NAME" in usage.stdout, usage
    assert "[scrapy" not in output and "Overridden settings" not in output, output
    assert len(output.splitlines()) < 40, output
    worker_log = (logs / "worker-1.log").read_text()
    assert "[scrapy.core.engine] INFO: Spider opened" in worker_log
    assert "panel" in {path.stem for path in logs.iterdir()}


def test_make_run_without_its_seeds_file_says_so(tmp_path):
    missing = tmp_path / "nowhere.txt"
    done = subprocess.run(
        [sys.executable, "-m", "crawler.runner.run", "--seeds", str(missing)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr == f"error: seeds file {missing}: not found\n"


def test_make_run_with_a_malformed_database_url_is_one_line(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("a.test\n")
    done = subprocess.run(
        [sys.executable, "-m", "crawler.runner.run", "--seeds", str(seeds)],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DATABASE_URL": "mysql://u:secret@db/x"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: DATABASE_URL: mysql:// is not Postgres; expected ")
    assert len(done.stderr.splitlines()) == 1 and "secret" not in done.stderr


# crawler.runner.run with its work replaced by: report how a child sees SIGINT, then wait.
WAITING_RUN = """
import signal, subprocess, sys
from crawler.runner import run

def waiting(args):
    child = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    print("child handles SIGINT:", subprocess.check_output([sys.executable, "-c", child],
          text=True).strip(), flush=True)
    signal.pause()

run.run = waiting
sys.exit(run.main([]))
"""


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_make_run_stops_on_a_signal_it_inherited_ignored(stop):
    """Started as a script's background job (SIGINT and SIGTERM ignored), it still stops,
    and its children get the signals back too."""
    started = subprocess.Popen(
        [sys.executable, "-c", WAITING_RUN],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_stop_signals,
    )
    try:
        assert started.stdout.readline() == "child handles SIGINT: True\n"
        started.send_signal(stop)
        assert started.wait(timeout=60) == 130
        assert started.stderr.read() == "stopped\n"
    finally:
        if started.poll() is None:
            started.kill()
            started.wait()
