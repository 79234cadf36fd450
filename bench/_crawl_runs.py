"""Running one crawler process for bench/crawl.py and slowweb.py and reading its figures."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# fakeweb's names end in .test, a special-use name the crawler refuses unless told (as the
# tests and make demo tell it): the seeds here, and every crawler process, inherit it.
os.environ.setdefault("LOCAL_SUFFIXES", "test")
CHILD_TIMEOUT = 300  # seconds: a bound, not a wait (a loaded machine is slow)
SECONDS_PER_HOST = 0.25  # a bigger world's bound: 4 hosts/s, far below any figure we see
# The crawler before it sized itself to the web (64 requests in flight, hangs retried, no
# connect timeout, no InFlightControl): the second baseline of crawl.py. Ours must be no
# slower than it, and no bigger.
BEFORE = "8751fd6"
STAT = re.compile(r"'([\w/.]+)': (\d+(?:\.\d+)?)")
# The crawl's tables (all but the schema version and the operators), for one TRUNCATE.
EVERY_TABLE = (
    "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables"
    " WHERE schemaname = current_schema() AND tablename NOT IN ('alembic_version', 'users')"
)


# -- running and measuring one crawler process -------------------------------------------


def run_child(
    args: list[str], log_path: Path, hosts: int = 0, cwd: Path = PROJECT_ROOT, env=None
) -> dict:
    """Run one crawler process to its end; its stats, wall time and peak RSS (wait4).
    Killed after CHILD_TIMEOUT, or SECONDS_PER_HOST for each of `hosts` if longer."""
    started = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = started + max(CHILD_TIMEOUT, hosts * SECONDS_PER_HOST)
    status, usage = 0, None
    while usage is None:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            usage = rusage
            break
        if time.perf_counter() > deadline:
            proc.send_signal(signal.SIGKILL)
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = log_path.read_text(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"crawler exited {proc.returncode}; log {log_path}:\n{text[-3000:]}")
    stats = {k: float(v) for k, v in STAT.findall(text.rpartition("Dumping Scrapy stats")[2])}
    return {
        "wall": time.perf_counter() - started,
        "elapsed": stats.get("elapsed_time_seconds", float("nan")),
        "responses": int(stats.get("response_received_count", 0)),
        "rss_mb": usage.ru_maxrss / 1024,  # Linux: kB
        "cpu": usage.ru_utime + usage.ru_stime,
        "user": usage.ru_utime,
        "system": usage.ru_stime,
        "stats": stats,
        "log": text,
    }


def empty_tables(engine) -> None:
    """Every table of the crawl emptied (ours, or the crawler before's: its own set)."""
    from sqlalchemy import text

    with engine.begin() as conn:
        tables = conn.execute(text(EVERY_TABLE)).scalar()
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))


def crawler_before(
    work: Path, url: str, names: list[str], commit: str = BEFORE
) -> tuple[Path, dict]:
    """`commit` (BEFORE unless named) unpacked in work/before-<commit>, its schema migrated
    on a new database of the server at `url` and `names` seeded there by its own CLI;
    (its tree, its env)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    tree = work / f"before-{commit}"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(PROJECT_ROOT), "archive", commit], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    database = f"before_{commit}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {database}"))
    admin.dispose()
    before_url = make_url(url).set(database=database).render_as_string(hide_password=False)
    env = {**os.environ, "DATABASE_URL": before_url, "PYTHONPATH": str(tree)}
    before_cli(tree, env, "db", "upgrade")
    seed_before(tree, env, names)
    return tree, env


def seed_before(tree: Path, env: dict, names: list[str]) -> None:
    """Seed `names` into the database of the crawler before, by its own CLI."""
    seeds = tree.parent / "before-seeds.txt"
    seeds.write_text("".join(n + "\n" for n in names))
    before_cli(tree, env, "seed", "-f", str(seeds))


def before_cli(tree: Path, env: dict, *command: str) -> None:
    cli = [sys.executable, "-m", "crawler.cli", *command]
    subprocess.run(cli, cwd=tree, env=env, check=True, capture_output=True)


def scrapy_args(command: list[str], web_settings: dict[str, str], **extra) -> list[str]:
    args = [sys.executable, "-m", "scrapy", *command]
    for name, value in {**web_settings, **extra}.items():
        args += ["-s", f"{name}={value}"]
    return args
