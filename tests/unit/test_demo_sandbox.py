"""`make demo` is a sandbox: its database is its own, never the operator's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from sqlalchemy import create_engine, text

from crawler.core.passwords import hash_password, verify_password
from crawler.db.server import engine as db_engine
from tests.fakeweb import demo, demo_operator
from tests.fakeweb.handle import PROJECT_ROOT
from tests.unit.test_panel_support import PASSWORD


def run_demo(env: dict, timeout: float) -> subprocess.CompletedProcess:
    """`make demo`'s program run with `env`, without a terminal (no prompt: it says how)."""
    return subprocess.run(
        [sys.executable, "-m", "tests.fakeweb.demo"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
    )


def test_the_demo_database_is_its_own_whatever_database_url_says(monkeypatch, tmp_path):
    monkeypatch.setenv("HOSTCRAWL_VAR", str(tmp_path / "var"))
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://operator@db.example/hostcrawl")
    started = []

    def embedded(pgdata):
        started.append(pgdata)
        return f"postgresql+psycopg://demo@/postgres?host={pgdata}"

    monkeypatch.setattr(db_engine, "embedded_server_url", embedded)

    url = demo.demo_database_url()

    var = db_engine.var_dir()
    assert started == [var / "demo" / "pg"]
    assert started[0] != var / "pg"
    assert "operator@db.example" not in url and str(var / "demo" / "pg") in url


URL = None  # no make run database: none was ever made


def never(prompt: str) -> str:
    raise AssertionError(f"asked {prompt!r} with no terminal")


def answers(*said: str):
    given = iter(said)
    return lambda prompt: next(given)


def password_of(db, name: str) -> str:
    with db.connect() as conn:
        users = text("SELECT password_hash FROM users WHERE username = :u")
        return conn.execute(users, {"u": name}).scalar_one()


@pytest.fixture
def run_database(engine):
    """`make run`'s database beside the demo's (the test one): its users table, with
    alice (enabled) and eve (disabled)."""
    name = f"{engine.url.database}_make_run"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = engine.url.set(database=name).render_as_string(hide_password=False)
    run = create_engine(url)
    with run.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE users (username text UNIQUE, password_hash text, role text,"
                " disabled_at timestamptz)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO users VALUES ('alice', :alice, 'admin', NULL),"
                " ('eve', :eve, 'admin', now())"
            ),
            {"alice": hash_password(PASSWORD), "eve": hash_password(PASSWORD)},
        )
    run.dispose()
    yield url
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.mark.parametrize("terminal", [False, True], ids=["no-terminal", "terminal"])
def test_the_demo_offers_make_runs_operators_with_their_passwords(db, run_database, terminal):
    ask = answers("") if terminal else never  # Enter: yes
    login = demo_operator.offer_operator(db, run_database, ask, never, terminal=terminal)
    assert login.known == ["alice"] and login.made is None  # eve is disabled: not offered
    assert verify_password(password_of(db, "alice"), PASSWORD)
    assert "log in as alice (your own password)" in demo.panel_hint("127.0.0.1:8000", login)


def test_without_a_terminal_and_no_operator_the_demo_makes_one_and_says_its_password(db, capsys):
    login = demo_operator.offer_operator(db, URL, never, never, terminal=False)
    said = capsys.readouterr().out
    assert login.known == [] and login.made[0] == "demo"
    assert verify_password(password_of(db, "demo"), login.made[1])
    assert login.made[1] not in said  # not yet: with the panel's address, once it answers
    assert "user create" not in said  # a command that would fail once the demo has exited
    hint = demo.panel_hint("127.0.0.1:8000", login)
    assert f"1. log in as demo, password {login.made[1]}" in hint
    assert "user create" not in hint and "DATABASE_URL" not in hint


def test_on_a_terminal_the_demo_creates_an_operator_then_reuses_it(db, capsys):
    typed = answers("correct horse battery", "correct horse battery")
    login = demo_operator.offer_operator(db, URL, answers("alice"), typed, terminal=True)
    assert login.known == ["alice"]
    assert "operator alice created in the demo's database" in capsys.readouterr().out
    # The next demo keeps alice, asking nothing.
    assert demo_operator.offer_operator(db, URL, never, never, terminal=True).known == ["alice"]
    assert "operators already in the demo's database: alice" in capsys.readouterr().out


def test_two_different_passwords_make_the_demo_operator_instead(db, capsys):
    typed = answers("correct horse battery", "correct horse staple")
    login = demo_operator.offer_operator(db, URL, answers("bob"), typed, terminal=True)
    assert login.known == [] and login.made[0] == "demo"
    assert "the two entries differ; no operator made" in capsys.readouterr().out


def test_a_taken_port_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        bind = f"127.0.0.1:{taken.getsockname()[1]}"
        env = {**os.environ, "DEMO_BIND": bind, "HOSTCRAWL_VAR": str(tmp_path / "var")}
        demo_run = run_demo(env, timeout=120)
    assert demo_run.returncode == 1, demo_run
    port = int(bind.rsplit(":", 1)[1])
    assert demo_run.stderr == (
        f"error: DEMO_BIND={bind}: the address is in use (another make run, or a demo?);"
        f" give the panel another: DEMO_BIND=127.0.0.1:{port + 1} make demo; nothing was"
        " started\n"
    )
    assert demo_run.stdout == ""  # no database, no fake internet, no crawl
    assert not (tmp_path / "var" / "demo").exists()
