"""`make run`'s console: the few lines that matter, while each child's log goes to var/log/.

- The panel's address once it answers /healthz, and, while no operator exists, the
  command that creates one (the `hostcrawl` beside this Python, or on PATH).
- A progress line every LOGSTATS_INTERVAL (the first once a worker has beaten): workers
  alive, pages and pages/s, hosts known, due now; while the world does not answer us,
  why (crawler.core.outages), and a line when it answers again.

Called by the supervisor between two looks at the children (crawler/runner/supervisor.py);
each look is cheap (the database is read once an interval).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from sqlalchemy import Engine, create_engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from crawler.core.words import counted
from crawler.db.crawl import heartbeats
from crawler.db.operators import accounts
from crawler.db.rules import world_silences
from crawler.db.server.engine import CONNECT_ARGS, database_url
from crawler.db.server.retry import first_line

# Seconds between two looks at the panel while it starts; then at the world's silence
# (a worker's heartbeat's pace).
LOOK_EVERY = 0.5
SILENCE_EVERY = 5.0


def say(line: str) -> None:
    print(line, flush=True)


def cli_command() -> str:
    """How the operator runs the CLI from here: `hostcrawl` when that on PATH is this
    project's, else the one beside this Python (.venv/bin/hostcrawl), else python -m."""
    beside = Path(sys.executable).parent / "hostcrawl"
    on_path = shutil.which("hostcrawl")
    if on_path and (not beside.exists() or Path(on_path).resolve() == beside.resolve()):
        return "hostcrawl"
    if beside.exists():
        relative = os.path.relpath(beside)
        return relative if not relative.startswith("..") else str(beside)
    return f"{sys.executable} -m crawler.cli"


def panel_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}healthz", timeout=1) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def local_url(bind: str) -> str:
    """Where this machine reaches the panel bound to `bind` (0.0.0.0: loopback)."""
    host, _, port = bind.rpartition(":")
    host = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "": "127.0.0.1"}.get(host, host)
    return f"http://{host}:{port}/"


class Console:
    """One look at the crawl per call: the panel's readiness, then the world's silence
    (told as it starts and ends) and progress, when due."""

    def __init__(self, bind: str | None, every: float) -> None:
        self.bind = bind
        self.every = every
        self.panel_ready = bind is None
        self.next_look = 0.0  # monotonic
        self.next_progress = 0.0
        self.silent = False  # the world's silence, as last told
        # No pool: no session of ours is left open when make run stops the database.
        self.engine: Engine = create_engine(
            database_url(), poolclass=NullPool, connect_args=CONNECT_ARGS
        )

    def __call__(self) -> None:
        now = time.monotonic()
        if now < self.next_look:
            return
        if not self.panel_ready:
            self.next_look = now + LOOK_EVERY
            self.look_at_the_panel()
            return
        self.next_look = now + SILENCE_EVERY
        try:
            with self.engine.connect() as conn:
                silence = world_silences.current(conn)
                figures = heartbeats.progress(conn) if now >= self.next_progress else None
        except DBAPIError as exc:
            if now >= self.next_progress:
                self.next_progress = now + self.every
                say(f"progress: database unavailable ({first_line(exc)})")
            return
        if figures is not None and (figures.workers or figures.pages):
            self.next_progress = now + self.every  # the first once a worker has beaten
            say(f"progress: {figures.describe()}")
            if silence is not None:
                say(f"  the world is not answering us: {silence_words(silence)}")
        elif silence is not None and not self.silent:
            say(f"the world is not answering us: {silence_words(silence)}")
        if silence is None and self.silent:
            say("the world answers us again")
        self.silent = silence is not None

    def look_at_the_panel(self) -> None:
        if not panel_answers(local_url(self.bind)):
            return
        self.panel_ready = True
        say(f"panel: http://{self.bind}/ is ready")
        try:
            operators = accounts.list_users(self.engine)
        except DBAPIError:
            return  # the progress line says the database is away
        if not operators:
            say(f"no operator yet: create one with {cli_command()} user create NAME")


def silence_words(silence: world_silences.Silence) -> str:
    """Why, and what is held meanwhile."""
    why = silence.describe() or "no failure tallied yet"
    check = f" (check {silence.settings_to_check})" if silence.settings_to_check else ""
    never = "; no host has answered yet in this database" if silence.never_answered else ""
    return f"{why}{check}{never}; {counted(silence.held_back, 'host')} held back, blocks held"
