"""`make demo` is a sandbox: its database is its own, never the operator's."""

from __future__ import annotations

from crawler.db import engine as db_engine
from tests.fakeweb import demo


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
