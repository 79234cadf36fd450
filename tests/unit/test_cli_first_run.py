"""A new operator's first commands (issue 43's first-run list), as real processes: each
answer is the project's own words, `error: …` and exit 1 when refused."""

from __future__ import annotations

import os
import pty
import select
import sys

import pytest
from sqlalchemy import make_url

from crawler.db import accounts
from crawler.db.migrate import SchemaState
from crawler.runner import console
from tests.unit.test_cli import assert_refused, hostcrawl, hostcrawl_process
from tests.waiting import wait_until


def test_version_is_the_package_version():
    run = hostcrawl_process("--version")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "hostcrawl 0.1.0\n"


def test_db_status_names_the_database_without_its_password_and_the_schema(db):
    run = hostcrawl("db", "status")
    assert run.returncode == 0, run.stderr
    shown = make_url(os.environ["DATABASE_URL"]).set(drivername="postgresql+psycopg")
    assert f"database: DATABASE_URL {shown.render_as_string(hide_password=True)}" in run.stdout
    assert "one Postgres server" in run.stdout
    assert "schema at head (" in run.stdout


def test_a_schema_behind_head_says_what_to_run():
    assert not SchemaState("0023", "0024").at_head
    assert SchemaState("0023", "0024").describe() == (
        "schema at 0023, head is 0024: run `hostcrawl db upgrade`"
    )
    assert SchemaState(None, "0024").describe().startswith("no schema yet, head is 0024")


def test_db_status_of_the_embedded_database_names_its_folder(monkeypatch, tmp_path):
    from crawler.db import migrate

    monkeypatch.delenv("DATABASE_URL", raising=False)  # unset in a worker with no db yet
    monkeypatch.setenv("HOSTCRAWL_VAR", str(tmp_path / "var"))
    assert migrate.database_name() == f"the embedded Postgres in {tmp_path / 'var' / 'pg'}"


def test_export_refuses_an_outcome_that_does_not_exist(db):
    run = hostcrawl("hosts", "export", "--outcome", "BOGUS")
    assert_refused(run, "error: --outcome BOGUS: no such outcome; give one of ", "DNS_TIMEOUT")
    assert run.stdout == ""  # no header, no file
    assert hostcrawl("hosts", "export", "--outcome", "none").returncode == 0


def test_seeding_localhost_names_the_one_setting_of_seeds_and_crawl(db):
    run = hostcrawl("seed", "localhost")
    assert_refused(run, "seed its address, 127.0.0.1, with ALLOWED_PRIVATE_NETWORKS=127.0.0.1/32")
    assert "ALLOW_PRIVATE_HOSTS" not in run.stderr and "--allow-private" not in run.stderr


def test_an_unwritable_output_is_refused_in_our_words(db, tmp_path):
    missing = tmp_path / "nowhere" / "hosts.csv"
    run = hostcrawl("hosts", "export", "-o", str(missing))
    assert_refused(run)
    assert run.stderr == f"error: {missing}: cannot open it (No such file or directory)\n"


def test_a_pasted_url_says_what_it_stored_and_names_the_registered_domain(db):
    run = hostcrawl("no-follow", "add", "https://WWW.Example-Shop.com/path", "shop.org")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "https://WWW.Example-Shop.com/path → www.example-shop.com: added"
    assert lines[1] == (
        "  note: only www.example-shop.com and the names under it; example-shop.com and its"
        " other names stay crawlable: add example-shop.com for the whole site"
    )
    assert lines[2:] == ["shop.org: added"]  # a registered domain needs no note


class Terminal:
    """The CLI run with a terminal of its own (pty.fork), as from an operator's shell."""

    def __init__(self, args: list[str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(sys.executable, [sys.executable, "-m", "crawler.cli", *args])
        self.said, self.closed = b"", False

    def read(self) -> bytes:
        """What it has written so far (a look, bounded by select's timeout)."""
        ready, _, _ = select.select([self.fd], [], [], 0.2)
        if ready and not self.closed:
            try:
                self.said += os.read(self.fd, 1024)
            except OSError:  # it has exited: its terminal is closed
                self.closed = True
        return self.said

    def type_after_prompt(self, line: str) -> None:
        prompts = self.said.count(b": ")
        wait_until(lambda: self.read().count(b": ") > prompts, 30, "a prompt")
        os.write(self.fd, line.encode() + b"\n")

    def finish(self) -> tuple[int, str]:
        wait_until(lambda: self.read() is not None and self.closed, 30, "the command to end")
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status), self.said.decode(errors="replace")


@pytest.mark.parametrize(
    ("again", "code", "said_then", "users"),
    [
        (
            "correct horse battery staple",
            1,
            "error: password: the two entries differ; nothing was stored",
            [],
        ),
        ("correct horse battery", 0, "user alice created (admin)", ["alice"]),
    ],
)
def test_the_password_typed_twice_creates_the_operator_or_is_refused_in_our_words(
    db, again, code, said_then, users
):
    terminal = Terminal(["user", "create", "alice"])
    terminal.type_after_prompt("correct horse battery")
    terminal.type_after_prompt(again)
    exit_code, said = terminal.finish()
    assert exit_code == code, said
    assert said_then in said
    assert "do not match" not in said and "Error:" not in said
    assert [user.username for user in accounts.list_users(db)] == users


def test_make_runs_console_names_the_first_operator_only_while_none_exists(db, monkeypatch, capsys):
    monkeypatch.setattr(console, "panel_answers", lambda url: True)
    shown = console.Console("127.0.0.1:8000", every=60)
    shown.look_at_the_panel()
    said = capsys.readouterr().out
    assert said.startswith("panel: http://127.0.0.1:8000/ is ready\n")
    assert f"no operator yet: create one with {console.cli_command()} user create NAME" in said
    accounts.create_user(db, "alice", "correct horse battery")
    console.Console("127.0.0.1:8000", every=60).look_at_the_panel()
    assert "no operator" not in capsys.readouterr().out


def test_the_cli_command_named_is_one_that_runs(monkeypatch, tmp_path):
    monkeypatch.setattr(console.shutil, "which", lambda name: None)
    monkeypatch.setattr(console.sys, "executable", str(tmp_path / "bin" / "python"))
    assert console.cli_command() == f"{tmp_path / 'bin' / 'python'} -m crawler.cli"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "hostcrawl").touch()
    monkeypatch.chdir(tmp_path)
    assert console.cli_command() == "bin/hostcrawl"  # .venv/bin/hostcrawl from a clone
