"""`make run`'s children: CRAWL_WORKERS crawler workers and the panel, kept running.

Each worker is `scrapy crawl hosts` with its own name (WORKER_NAME=worker-1@host, ...)
at the start of each of its log lines, and its own metrics port when METRICS_PORT is
set (METRICS_PORT + 0, + 1, ...). A worker that dies (a crash, the OOM killer, kill -9)
is started again in its place after a back-off of 1 s, 2 s, 4 s ... up to BACKOFF_MAX
(back to 1 s once it has run BACKOFF_MAX without dying); the supervisor says which
worker, its exit code and when it comes back. A worker that ends by itself with exit
code 0 (CLOSE_WHEN_DRAINED: nothing left to crawl) is done, not restarted; when every
worker is done, or the panel ends, the rest are stopped. Ctrl-C or SIGTERM stops them
all gracefully (one SIGINT each: a second makes Scrapy stop uncleanly), then says they have
stopped (make run then stops the embedded database and says so). Under `make run`
each child's output goes to its own file under var/log/ (`log_to`): the console keeps
the supervisor's words and crawler/runner/console.py's lines.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from crawler.core import config
from crawler.core.worker_count import worker_name
from crawler.db.server.engine import PROJECT_ROOT

GRACE_SECONDS = 60
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
TICK = 0.2  # seconds between two looks at the children


def say(message: str) -> None:
    print(f"supervisor: {message}", file=sys.stderr, flush=True)


def how_it_ended(code: int) -> str:
    if code < 0:
        return f"exit code {code} ({signal.Signals(-code).name})"
    return f"exit code {code}"


@dataclass
class Child:
    """One process `make run` keeps: a crawler worker (restarted when it dies) or the panel."""

    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    worker: bool = True
    proc: subprocess.Popen | None = None
    started: float = 0.0
    failures: int = 0  # deaths in a row, for the back-off
    restart_at: float | None = None
    done: bool = False  # ended normally: not restarted
    # Where its output goes (appended, a restart's too); None: the console.
    log_path: Path | None = None

    def start(self) -> None:
        log = None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(self.log_path, "ab")  # noqa: SIM115 (the child holds it; ours is closed)
        try:
            self.proc = subprocess.Popen(
                self.command,
                cwd=PROJECT_ROOT,
                env={**os.environ, **self.env},
                stdout=log,
                stderr=subprocess.STDOUT if log else None,
                # Own sessions: a terminal's Ctrl-C reaches only the supervisor, and it
                # sends exactly one SIGINT.
                start_new_session=True,
            )
        finally:
            if log is not None:
                log.close()
        self.started = time.monotonic()
        self.restart_at = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def workers(count: int, environ: dict[str, str] | None = None) -> list[Child]:
    """The crawler workers: their names, their log format and their metrics ports."""
    environ = os.environ if environ is None else environ
    host = socket.gethostname()
    metrics_port = config.from_environment("METRICS_PORT", environ)
    made = []
    for index in range(1, count + 1):
        name = worker_name(index, host)
        log_format = f"%(asctime)s {name} [%(name)s] %(levelname)s: %(message)s"
        command = [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "hosts",
            "-s",
            f"LOG_FORMAT={log_format}",
        ]
        env = {"WORKER_NAME": name}
        if metrics_port:
            env["METRICS_PORT"] = str(metrics_port + index - 1)
        made.append(Child(name, command, env))
    return made


def log_to(children: list[Child], folder: Path) -> list[Path]:
    """Send each child's output to its own file in `folder` (worker-1.log, panel.log)."""
    for child in children:
        child.log_path = folder / f"{child.name.split('@')[0]}.log"
    return [child.log_path for child in children]


class Supervisor:
    def __init__(self, children: list[Child], every_tick: Callable[[], None] = lambda: None):
        self.children = children
        self.every_tick = every_tick  # the console's look at the crawl (crawler/runner/console.py)

    def run(self) -> int:
        """Start the children and keep the workers running until a signal, every worker
        done, or the panel's end; then stop them all. The exit code of the last of them."""
        try:
            for child in self.children:
                child.start()
                if child.log_path is None:
                    say(f"started {child.name} (pid {child.proc.pid})")
            while self.tick():
                self.every_tick()
                time.sleep(TICK)
        except KeyboardInterrupt:
            say("stopping…")
        return self.stop()

    def tick(self) -> bool:
        """One look at the children: restarts due, deaths noticed. False: time to stop."""
        now = time.monotonic()
        for child in self.children:
            if child.done or child.running:
                continue
            if child.restart_at is not None:
                if now >= child.restart_at:
                    child.start()
                    say(f"restarted {child.name} (pid {child.proc.pid})")
                continue
            code = child.proc.returncode
            if not child.worker:
                say(f"{child.name} ended ({how_it_ended(code)}); stopping the workers")
                return False
            if code == 0:
                child.done = True
                say(f"{child.name} finished (exit code 0: nothing left to crawl); not restarted")
                continue
            if now - child.started >= BACKOFF_MAX:
                child.failures = 0  # it had run a good while: a new failure, not a loop
            delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2**child.failures)
            child.failures += 1
            child.restart_at = now + delay
            when = (datetime.now(UTC) + timedelta(seconds=delay)).strftime("%H:%M:%S UTC")
            say(
                f"{child.name} (pid {child.proc.pid}) died with {how_it_ended(code)};"
                f" restarting it in {delay:g} s (at {when})"
            )
        return not all(child.done for child in self.children if child.worker)

    def stop(self) -> int:
        """Stop every running child gracefully (SIGINT), then kill what outlasts the grace."""
        running = [child for child in self.children if child.running]
        for child in running:
            child.proc.send_signal(signal.SIGINT)
        # A second signal while they stop must not cut this short: the database comes last.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for child in running:
            try:
                child.proc.wait(timeout=GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                say(f"{child.name} did not stop within {GRACE_SECONDS} s; killed")
                child.proc.kill()
                child.proc.wait()
        codes = [child.proc.returncode or 0 for child in running]
        say(f"stopped {stopped_words(self.children)}")
        return max(codes, default=0)


def stopped_words(children: list[Child]) -> str:
    """'worker-1@h, worker-2@h and the panel': every child, each now ended."""
    names = [child.name if child.worker else f"the {child.name}" for child in children]
    if len(names) < 2:
        return "".join(names) or "nothing (no child was started)"
    return f"{', '.join(names[:-1])} and {names[-1]}"
