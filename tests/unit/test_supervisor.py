"""crawler/runner/supervisor.py: how many workers, their names and ports, and the back-off with
which a dead worker is started again (real child processes, driven one look at a time)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.core import config
from crawler.core.worker_count import WorkerCount
from crawler.db.server.engine import PROJECT_ROOT
from crawler.runner import supervisor
from crawler.runner.supervisor import Child, Supervisor
from tests.waiting import wait_until


@pytest.fixture(autouse=True)
def own_signal_handlers():
    """Supervisor.stop ignores SIGINT and SIGTERM from then on (make run exits next): give
    them back, or the next test's children would start with them ignored."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in handlers.items():
        signal.signal(number, handler)


@pytest.mark.parametrize(("cores", "expected"), [(1, 1), (2, 2), (4, 4), (8, 7), (16, 14)])
def test_auto_leaves_the_database_its_share_of_the_cores(cores, expected):
    assert WorkerCount("auto").effective(cores) == expected
    assert WorkerCount(" 5 ").effective(cores) == 5  # a number is a number, whatever the cores


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5", "auto2"])
def test_a_bad_worker_count_names_the_setting_and_what_it_takes(raw):
    with pytest.raises(config.SettingError) as refused:
        config.from_environment("CRAWL_WORKERS", {"CRAWL_WORKERS": raw})
    assert str(refused.value) == f"CRAWL_WORKERS={raw!r}: expected auto or a whole number >= 1"


@pytest.mark.parametrize(
    ("name", "raw", "says"),
    [
        ("CRAWL_WORKERS", "many", "expected auto or a whole number >= 1"),
        # A worker's setting too: said once, not by each worker restarted in a loop.
        ("DNS_TIMEOUT", "0", "expected a number >= 0.1"),
    ],
)
def test_make_run_refuses_a_bad_setting_in_one_line_before_it_starts(tmp_path, name, raw, says):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("a.test\n")
    done = subprocess.run(
        [sys.executable, "-m", "crawler.runner.run", "--seeds", str(seeds)],
        cwd=PROJECT_ROOT,
        env={name: raw, "PATH": "/usr/bin:/bin", "HOSTCRAWL_VAR": str(tmp_path / "var")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr == f"error: {name}={raw!r}: {says}\n"
    assert done.stdout == "" and not (tmp_path / "var").exists()  # nothing was started


def test_each_worker_has_its_name_its_log_format_and_its_metrics_port():
    made = supervisor.workers(3, {"METRICS_PORT": "9410"})
    names = [w.name for w in made]
    assert names == [f"worker-{i}@{supervisor.socket.gethostname()}" for i in (1, 2, 3)]
    assert [w.env["WORKER_NAME"] for w in made] == names
    assert [w.env["METRICS_PORT"] for w in made] == ["9410", "9411", "9412"]
    assert f"LOG_FORMAT=%(asctime)s {names[1]} [%(name)s]" in " ".join(made[1].command)
    assert "METRICS_PORT" not in supervisor.workers(1, {})[0].env  # off stays off


def exiting(code: int, name: str = "w", worker: bool = True) -> Child:
    return Child(name, [sys.executable, "-c", f"raise SystemExit({code})"], worker=worker)


def ended(child: Child) -> None:
    child.proc.wait(timeout=30)


def test_a_dead_worker_comes_back_after_1_2_4_seconds_capped(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(supervisor, "BACKOFF_MAX", 4.0)
    dying = exiting(3, "worker-1@h")
    up = tmp_path / "worker-2-up"
    other = sleeper_that_says_it_is_up("worker-2@h", up)
    keeper = Supervisor([dying, other])
    for child in keeper.children:
        child.start()
    try:
        delays = []
        for _ in range(4):
            ended(dying)
            dead_pid = dying.proc.pid
            assert keeper.tick()  # noticed: a restart is due later, nothing else stops
            assert dying.restart_at is not None and not dying.running
            said = capsys.readouterr().err
            assert f"worker-1@h (pid {dead_pid}) died with exit code 3; restarting it in " in said
            delays.append(said.split("restarting it in ")[1].split(" s")[0])
            dying.restart_at = 0  # due now (the test does not wait the back-off out)
            assert keeper.tick()
            assert dying.proc.pid != dead_pid
            assert f"supervisor: restarted worker-1@h (pid {dying.proc.pid})" in (
                capsys.readouterr().err
            )
        assert delays == ["1", "2", "4", "4"]
        assert other.running  # the other worker was never touched
    finally:
        wait_until(up.exists, what="the other worker to start")  # so it hears the SIGINT
        keeper.stop()


def test_a_killed_worker_is_named_with_its_signal(capsys):
    killed = Child("worker-1@h", [sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    keeper = Supervisor([killed])
    killed.start()
    ended(killed)
    assert keeper.tick()
    assert "died with exit code -9 (SIGKILL); restarting it in 1 s (at " in capsys.readouterr().err


def sleeper_that_says_it_is_up(name: str, up: Path, worker: bool = True) -> Child:
    """A child that touches `up` once Python has started: a SIGINT sent earlier would land
    in the interpreter's start-up (exit code 1), not in the program's sleep. It hears SIGINT
    as a real panel does, whatever its parent ignored (a test process may ignore it, and
    Python then leaves it ignored in the child)."""
    script = (
        "import pathlib, signal, time; signal.signal(signal.SIGINT, signal.default_int_handler);"
        f" pathlib.Path({str(up)!r}).touch(); time.sleep(60)"
    )
    return Child(name, [sys.executable, "-c", script], worker=worker)


def test_workers_that_end_normally_are_done_and_then_the_panel_stops(capsys, tmp_path):
    first, second = exiting(0, "worker-1@h"), exiting(0, "worker-2@h")
    up = tmp_path / "panel-up"
    panel = sleeper_that_says_it_is_up("panel", up, worker=False)
    keeper = Supervisor([first, second, panel])
    for child in keeper.children:
        child.start()
    ended(first)
    ended(second)
    assert not keeper.tick()  # every worker is done: time to stop
    assert first.done and second.done and first.restart_at is None
    said = capsys.readouterr().err
    assert "supervisor: worker-1@h finished (exit code 0: nothing left to crawl)" in said
    wait_until(up.exists, what="the panel stand-in to start")
    keeper.stop()  # the panel gets its SIGINT
    assert not panel.running and panel.proc.returncode == -signal.SIGINT
    # Said once every child has ended, not only "stopping…".
    said = capsys.readouterr().err
    assert said == "supervisor: stopped worker-1@h, worker-2@h and the panel\n", said


def test_the_panel_ending_stops_the_workers(capsys, tmp_path):
    up = tmp_path / "worker-up"
    worker = sleeper_that_says_it_is_up("worker-1@h", up)
    panel = exiting(1, "panel", worker=False)
    keeper = Supervisor([worker, panel])
    for child in keeper.children:
        child.start()
    ended(panel)
    assert not keeper.tick()
    assert "supervisor: panel ended (exit code 1); stopping the workers" in capsys.readouterr().err
    wait_until(up.exists, what="the worker stand-in to start")
    keeper.stop()
    assert not worker.running


@pytest.mark.parametrize(("raw", "shown"), [(None, "auto (= {auto})"), ("3", "3 (= 3)")])
def test_hostcrawl_settings_shows_the_worker_count_and_what_it_comes_to(raw, shown):
    env = {"PATH": "/usr/bin:/bin", **({"CRAWL_WORKERS": raw} if raw else {})}
    done = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "settings"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("CRAWL_WORKERS "))
    auto = WorkerCount("auto").effective(len(os.sched_getaffinity(0)))
    source = "environment" if raw else "default"
    assert line.split()[1:5] == [*shown.format(auto=auto).split(), source]
