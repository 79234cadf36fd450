"""Every bad start is one line naming the input and the fix, never a traceback: a database
without the schema, a malformed or blank DATABASE_URL (in the CLI, `make run` and the
Scrapy commands), and `make run` on a port already taken."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from crawler.db.server.engine import (
    PROJECT_ROOT,
    DatabaseUrlError,
    checked_database_url,
    database_url,
)

TIMEOUT = 120  # seconds: only turns a hang into a failure


# Should a start get past its check after all, it crawls nothing beyond loopback.
NOWHERE = {"HOST_URL_TEMPLATE": "http://127.0.0.1:9/{hostname}", "DNS_NAMESERVERS": "127.0.0.1:9"}


def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """`command` in a session of its own, all of which is killed should it outlive TIMEOUT."""
    with subprocess.Popen(
        command,
        cwd=PROJECT_ROOT,
        env={**os.environ, **NOWHERE, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as started:
        try:
            out, err = started.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(started.pid, signal.SIGKILL)
            started.communicate()
            pytest.fail(f"{command} still running after {TIMEOUT} s")
    return subprocess.CompletedProcess(command, started.returncode, out, err)


@pytest.fixture
def unmigrated_url(engine):
    """A database on the test server with no schema at all."""
    name = "hostcrawl_bad_starts_unmigrated"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        conn.execute(text(f"CREATE DATABASE {name}"))
    url = make_url(engine.url.render_as_string(hide_password=False)).set(database=name)
    yield url.render_as_string(hide_password=False)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_hosts_export_without_the_schema_says_run_db_upgrade(unmigrated_url, fmt):
    done = run(
        [sys.executable, "-m", "crawler.cli", "hosts", "export", "--format", fmt],
        {"DATABASE_URL": unmigrated_url},
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        "error: the database has no schema yet: run `hostcrawl db upgrade` first\n"
    )


# -- DATABASE_URL: malformed, blank -----------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://u:secret@[::1/db", "the host's '[' is never closed"),
        ("postgresql://u:secret@[::1]:x/db", "the port is not a number from 1 to 65535"),
        ("postgresql://u:secret@db:54x2/db", "the port is not a number from 1 to 65535"),
        ("postgresql://u:secret@db:99999/db", "the port is not a number from 1 to 65535"),
        ("postgresql://u:secret@::1/db", "an IPv6 host goes in brackets"),
    ],
)
def test_a_url_make_url_cannot_read_names_the_problem(url, says):
    with pytest.raises(DatabaseUrlError) as refused:
        checked_database_url(url)
    message = str(refused.value)
    assert message.startswith("DATABASE_URL: ") and says in message
    assert "secret" not in message and "\n" not in message


def test_a_bracketed_ipv6_host_and_port_are_still_taken():
    url = "postgresql://u:p@[::1]:5432/db"
    assert checked_database_url(url) == "postgresql+psycopg://u:p@[::1]:5432/db"


@pytest.mark.parametrize("blank", [" ", "\t", "  \n"])
def test_a_blank_database_url_is_refused_not_taken_as_unset(monkeypatch, tmp_path, blank):
    monkeypatch.setenv("DATABASE_URL", blank)
    monkeypatch.setenv("HOSTCRAWL_VAR", str(tmp_path / "var"))  # were it taken as unset
    with pytest.raises(DatabaseUrlError, match="DATABASE_URL is set but blank: unset it"):
        database_url()


BAD_URLS = {
    "unclosed-bracket": ("postgresql://u:secret@[::1/db", "'[' is never closed"),
    "blank": (" ", "set but blank"),
}
STARTS = {
    "cli": [sys.executable, "-m", "crawler.cli", "no-follow", "list"],
    "make-run": [sys.executable, "-m", "crawler.runner.run", "--bind", "127.0.0.1:0", "--seeds"],
    "scrapy-crawl": [sys.executable, "-m", "scrapy", "crawl", "hosts"],
    "scrapy-audit": [sys.executable, "-m", "scrapy", "audit"],
}


@pytest.mark.parametrize("start", STARTS, ids=list(STARTS))
@pytest.mark.parametrize("bad", BAD_URLS, ids=list(BAD_URLS))
def test_a_bad_database_url_is_one_line_wherever_it_starts(tmp_path, start, bad):
    url, says = BAD_URLS[bad]
    # var/ of its own: whatever goes wrong, the repo's embedded database is never started.
    env = {"DATABASE_URL": url, "HOSTCRAWL_VAR": str(tmp_path / "var")}
    command = STARTS[start]
    if command[-1] == "--seeds":
        (tmp_path / "seeds.txt").write_text("a.test\n")
        command = [*command, str(tmp_path / "seeds.txt")]
    done = run(command, env)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output and "secret" not in output
    said = [line for line in output.splitlines() if "DATABASE_URL" in line]
    assert len(said) == 1 and says in said[0], output
    if start.startswith("scrapy"):  # among Scrapy's own start-up lines, a CRITICAL one
        assert "CRITICAL: DATABASE_URL" in said[0]
    else:
        assert done.stderr == said[0] + "\n" and said[0].startswith("error: DATABASE_URL")


# -- make run on a busy port ------------------------------------------------------------


def test_make_run_on_a_busy_port_is_one_line_and_starts_nothing(database_url, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("a.test\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(
            [sys.executable, "-m", "crawler.runner.run", "--seeds", str(seeds)]
            + ["--bind", f"127.0.0.1:{port}"],
            {"DATABASE_URL": database_url},
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""  # no crawler, panel or migration said a word
    said = done.stderr.splitlines()
    assert len(said) == 1, done.stderr
    assert said[0].startswith(f"error: --bind 127.0.0.1:{port}: the address is in use")
    assert "give the panel another: make run BIND=127.0.0.1:" in said[0]
