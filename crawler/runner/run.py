"""`make run`: the main job on one machine, embedded database by default.

Holds the database (starting the embedded one under var/ if DATABASE_URL is unset,
sized for this machine and said in one line), migrates, queues the seeds, then runs
CRAWL_WORKERS crawler workers — and the panel under gunicorn when it is installed — as
child processes sharing that database, a dead worker restarted
(crawler/runner/supervisor.py). Ctrl-C — or SIGTERM, which supervisors and `docker stop`
send — stops the children gracefully, then the database. The console shows only what
matters (crawler/runner/console.py): where the logs are (var/log/, a file per child), the
panel's address once it is ready, and a progress line per interval.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from crawler.core import config
from crawler.core.setting_declaration import SettingError
from crawler.core.words import counted
from crawler.db.server.engine import (
    PROJECT_ROOT,
    DatabaseUrlError,
    database_url,
    embedded_tuning,
    leave_embedded_server,
    var_dir,
)
from crawler.db.server.machine import worker_count
from crawler.runner.console import Console
from crawler.runner.supervisor import Child, Supervisor, log_to, workers


def children(bind: str, count: int) -> list[Child]:
    """The processes to run beside each other: `count` workers, then the panel."""
    made = workers(count)
    if importlib.util.find_spec("webpanel") is not None:
        app = "webpanel:create_app()"
        panel = [sys.executable, "-m", "gunicorn", "--bind", bind, "--workers", "2", app]
        made.append(Child("panel", panel, worker=False))
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=Path, default=PROJECT_ROOT / "seeds.txt")
    parser.add_argument(
        "--bind", default="127.0.0.1:8000", help="where the panel listens (make run BIND=...)"
    )
    parser.add_argument(
        "--progress-every",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="seconds between two progress lines on the console (default 60)",
    )
    args = parser.parse_args(argv)
    # SIGINT and SIGTERM take Ctrl-C's path: the children stop gracefully and the embedded
    # database is stopped on the way out (its exit hook runs only on a normal exit). Set
    # whatever was inherited: a script's background job starts with SIGINT ignored, and an
    # ignored signal stays ignored in the children too (a handler does not survive exec).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)  # before the children were started
        return 130
    except (DatabaseUrlError, SettingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    """Database, schema, seeds, then the children until a signal or one of them ends."""
    if not args.seeds.is_file():
        print(f"error: seeds file {args.seeds}: not found", file=sys.stderr)
        return 1
    # Every setting read now: a bad one is one line before anything starts, not the
    # same error from each worker, restarted again and again.
    for _ in config.effective(os.environ):
        pass
    count = worker_count()
    busy = importlib.util.find_spec("webpanel") is not None and bind_problem(args.bind)
    if busy:
        print(f"error: {busy}", file=sys.stderr)
        return 1
    url = database_url()
    tuning = embedded_tuning()  # None: DATABASE_URL's server is its owner's
    if tuning is not None:
        print(tuning.describe(), flush=True)
    os.environ["DATABASE_URL"] = url  # children share this server
    if hostcrawl("db", "upgrade") != 0:
        return 1  # the CLI has said why
    if hostcrawl("seed", "-f", str(args.seeds)) != 0:
        # The CLI named each refused line and why; the rest are queued.
        print(
            f"warning: {args.seeds}: some seeds were refused (above); crawling the rest",
            file=sys.stderr,
        )
    started = children(args.bind, count)
    logs = log_to(started, var_dir() / "log")
    print(
        f"{counted(count, 'crawler worker')} (CRAWL_WORKERS); every log in"
        f" {shown(logs[0].parent)}/ ({', '.join(log.name for log in logs)})",
        flush=True,
    )
    panel = None if started[-1].worker else args.bind
    code = Supervisor(started, Console(panel, args.progress_every)).run()
    print(f"stopped: {stopped_database(tuning is not None)}", file=sys.stderr, flush=True)
    return code


def stopped_database(embedded: bool) -> str:
    """The children have stopped: the embedded database now (its exit hook would do it
    after the last line), so the last line can say everything has."""
    if not embedded:
        return "every worker and the panel (DATABASE_URL's server is its owner's)"
    if leave_embedded_server(var_dir() / "pg"):
        return "every worker, the panel and the embedded database"
    return "every worker and the panel; the embedded database serves its other users still"


def shown(path: Path) -> str:
    """`path` relative to the current folder when it is under it (var/log), else whole."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def bind_problem(bind: str, given: str = "--bind", again: str = "make run BIND={}") -> str | None:
    """Why the panel could not listen on `bind` (HOST:PORT, as gunicorn reads it), or None.
    `given`: how the operator gave it; `again`: the command with another address in {}
    (`make demo` asks too: DEMO_BIND, "DEMO_BIND={} make demo").

    Asked before anything starts: gunicorn would find out only after the database, the
    seeds and a second crawler were started, and say so five times.
    """
    from gunicorn.util import parse_address

    given = f"{given} {bind}" if given.startswith("-") else f"{given}={bind}"
    try:
        address = parse_address(bind)
    except RuntimeError:  # gunicorn's word for a bad port
        return f"{given}: not HOST:PORT (as in {again.format('127.0.0.1:8000')})"
    if not isinstance(address, tuple):
        return None  # a Unix socket or an inherited descriptor: gunicorn's to judge
    host, port = address
    if not 0 <= port <= 65535:
        return f"{given}: port {port} is not in 0-65535"
    # The family gunicorn picks: IPv6 for an IPv6 literal, else IPv4 (a name resolved).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
            sock.bind((host, port))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            return f"{given}: {exc.strerror}; give an address of this machine"
        shown = f"[{host}]" if family == socket.AF_INET6 else host or "0.0.0.0"
        return (
            f"{given}: the address is in use (another make run, or a demo?); "
            f"give the panel another: {again.format(f'{shown}:{port % 65535 + 1}')}"
        )
    return None


def hostcrawl(*args: str) -> int:
    """Run one `hostcrawl` CLI command; its exit code."""
    return subprocess.run([sys.executable, "-m", "crawler.cli", *args], cwd=PROJECT_ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
