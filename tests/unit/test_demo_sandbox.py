"""`make demo` is a sandbox: its database is its own, never the operator's."""

from __future__ import annotations

from crawler.db.server import engine as db_engine
from tests.fakeweb import demo, demo_operator


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


def test_the_hint_creates_the_operator_in_the_demo_database():
    hint = demo.panel_hint("127.0.0.1:8000", "postgresql+psycopg://demo@/postgres?host=/v/demo/pg")
    assert "DATABASE_URL='postgresql+psycopg://demo@/postgres?host=/v/demo/pg'" in hint


URL = "postgresql+psycopg://demo@/postgres?host=/v/demo/pg"


def never(prompt: str) -> str:
    raise AssertionError(f"asked {prompt!r} with no terminal")


def answers(*said: str):
    given = iter(said)
    return lambda prompt: next(given)


def test_without_a_terminal_the_demo_asks_nothing_and_says_how(db, capsys):
    assert demo_operator.offer_operator(db, URL, never, never, terminal=False) == []
    said = capsys.readouterr().out
    assert "stdin is not a terminal, so no prompt: create one with" in said
    assert f"DATABASE_URL='{URL}' .venv/bin/hostcrawl user create NAME" in said


def test_on_a_terminal_the_demo_creates_an_operator_then_reuses_it(db, capsys):
    typed = answers("correct horse battery", "correct horse battery")
    assert demo_operator.offer_operator(db, URL, answers("alice"), typed, terminal=True) == [
        "alice"
    ]
    assert "operator alice created in the demo's database" in capsys.readouterr().out
    # The next demo: Enter keeps alice, whom the hint names.
    assert demo_operator.offer_operator(db, URL, answers(""), never, terminal=True) == ["alice"]
    assert "operators in the demo's database: alice" in capsys.readouterr().out
    assert "1. log in as alice" in demo.panel_hint("127.0.0.1:8000", URL, ["alice"])


def test_two_different_passwords_make_no_operator(db, capsys):
    typed = answers("correct horse battery", "correct horse staple")
    assert demo_operator.offer_operator(db, URL, answers("bob"), typed, terminal=True) == []
    assert "the two entries differ; no operator made" in capsys.readouterr().out
