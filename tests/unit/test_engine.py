"""The embedded server and DATABASE_URL: a dead pid in the embedded server's list is
cleared, and a malformed DATABASE_URL is one line naming the accepted forms."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from crawler.db.engine import ACCEPTED_URLS, DatabaseUrlError, checked_database_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://u:p@db:5432/x", "postgresql+psycopg://u:p@db:5432/x"),
        ("postgresql://u:p@db/x", "postgresql+psycopg://u:p@db/x"),
        ("postgresql+psycopg://u:p%40w@db/x", "postgresql+psycopg://u:p%40w@db/x"),
        ("postgres:///x?host=/run/pg", "postgresql+psycopg:///x?host=%2Frun%2Fpg"),
    ],
)
def test_postgres_urls_are_taken_as_psycopg(url, expected):
    assert checked_database_url(url) == expected


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://u:secret@db/x", "mysql:// is not Postgres"),
        ("sqlite:///x.db", "sqlite:// is not Postgres"),
        ("nonsense", "not a URL"),
        ("postgres//u:secret@db", "not a URL"),
    ],
)
def test_other_urls_are_one_line_naming_the_accepted_forms(url, says):
    with pytest.raises(DatabaseUrlError) as refused:
        checked_database_url(url)
    message = str(refused.value)
    assert says in message and ACCEPTED_URLS in message and "\n" not in message
    assert "secret" not in message  # the URL's password is never repeated


HOLD = """
import os, signal, sys
from pathlib import Path
from crawler.db.engine import embedded_server_url

embedded_server_url(Path(sys.argv[1]))
if sys.argv[2] == "die":
    os.kill(os.getpid(), signal.SIGKILL)  # leaves its pid in .handle_pids.json
"""


def postmaster(pgdata: Path) -> psutil.Process | None:
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return None
    try:
        return psutil.Process(int(pid_file.read_text().split()[0]))
    except (psutil.NoSuchProcess, ValueError, IndexError):
        return None


def test_a_dead_pid_in_the_handle_list_does_not_keep_postgres_running(tmp_path):
    pgdata = tmp_path / "pg"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("DATABASE_URL", None)
    run = [sys.executable, "-c", HOLD, str(pgdata)]
    try:
        killed = subprocess.run([*run, "die"], env=env, timeout=120)
        assert killed.returncode == -signal.SIGKILL
        server = postmaster(pgdata)
        assert server is not None and server.is_running()
        dead = json.loads((pgdata / ".handle_pids.json").read_text())
        assert dead and not any(psutil.pid_exists(pid) for pid in dead)
        # A later process joins the server and exits normally: it is the last user alive.
        assert subprocess.run([*run, "exit"], env=env, timeout=120).returncode == 0
        try:
            server.wait(timeout=30)  # polls until the postmaster is gone, 30 s at most
        except psutil.TimeoutExpired:
            pytest.fail("the dead pid kept Postgres running")
    finally:
        leftover = postmaster(pgdata)
        if leftover is not None and leftover.is_running():
            leftover.kill()


def test_the_embedded_server_runs_with_the_advised_settings(embedded_pgdata, engine):
    """autovacuum_naptime, checkpoint_timeout, max_wal_size… which no migration can set,
    are the embedded server's (ALTER SYSTEM on start), sized for the tests' 512 MB."""
    if embedded_pgdata is None:
        pytest.skip("a server behind TEST_DATABASE_URL is its owner's to tune")
    from crawler.core.server_advice import embedded_settings
    from crawler.db.server_settings import current_settings

    with engine.connect() as conn:
        current = current_settings(conn)
    advised = embedded_settings(512, current)
    assert {name: current[name].value for name in advised} == advised
    assert advised["autovacuum_naptime"] == 10  # churn's dead rows depend on it
