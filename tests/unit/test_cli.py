"""The hostcrawl CLI as an operator runs it: exit codes, stdout and stderr, in this process
(tests/cli.py); a refusal, a database outage and --version on real processes."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sqlalchemy import text

from crawler.db.crawl import claims
from crawler.db.rules import deny_entries
from tests.cli import Ran, hostcrawl


def hostcrawl_process(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """`python -m crawler.cli ARGS`: what only the real entry point shows."""
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_refused(run: Ran | subprocess.CompletedProcess, *words: str) -> None:
    assert run.returncode == 1, run
    assert "Traceback" not in run.stderr
    for word in words:
        assert word in run.stderr


def test_db_upgrade_is_idempotent(database_url):
    run = hostcrawl("db", "upgrade")
    assert run.returncode == 0, run.stderr
    assert "head" in run.stdout


def test_seed_prints_what_it_stored(db):
    run = hostcrawl("seed", "Example.ORG:8080", "bücher.de")
    assert run.returncode == 0, run.stderr
    assert "Example.ORG:8080 → example.org: queued" in run.stdout
    assert "bücher.de → xn--bcher-kva.de: queued" in run.stdout
    assert set(claims.claim(db, 10, "w")) == {"example.org", "xn--bcher-kva.de"}


def test_seed_from_file(db, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# comment\na.test\n\nb.test\n")
    run = hostcrawl("seed", "-f", str(seeds))
    assert run.returncode == 0, run.stderr
    assert set(claims.claim(db, 10, "w")) == {"a.test", "b.test"}


def test_seed_refuses_bad_input_but_keeps_the_good(db):
    run = hostcrawl_process("seed", "good.test", "bad..test")
    assert_refused(run, "'bad..test'", "empty label")
    assert claims.claim(db, 10, "w") == ["good.test"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("no-follow", "add", "com"), ("'com'", "public suffix")),
        (("no-follow", "add", "bad-.test"), ("'bad-.test'", "bad label")),
        (("no-follow", "add", "x.test:99999"), ("bad port",)),
        (("blocked", "unblock", "a..b"), ("'a..b'", "empty label")),
        (("no-follow", "remove", "http://"), ("empty",)),
    ],
)
def test_refusals_exit_1_with_input_and_reason(db, args, words):
    assert_refused(hostcrawl(*args), *words)
    with db.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM queue")).scalar() == 0


def test_no_follow_add_list_remove(db):
    run = hostcrawl("no-follow", "add", "Facebook.COM:443", "*.youtube.com", "--note", "giant")
    assert run.returncode == 0, run.stderr
    assert "Facebook.COM:443 → facebook.com: added" in run.stdout
    assert "*.youtube.com → youtube.com: added" in run.stdout
    listed = hostcrawl("no-follow", "list").stdout.splitlines()
    assert listed == ["facebook.com\tgiant", "youtube.com\tgiant"]
    run = hostcrawl("no-follow", "remove", "facebook.com")
    assert "facebook.com: removed" in run.stdout
    assert hostcrawl("no-follow", "list").stdout.splitlines() == ["youtube.com\tgiant"]


def test_no_follow_force_accepts_a_public_suffix(db):
    run = hostcrawl("no-follow", "add", "co.uk", "--force")
    assert run.returncode == 0, run.stderr
    assert deny_entries.deny_entries(db) == [("co.uk", "no_follow")]


def test_blocked_list_and_unblock(db):
    deny_entries.upsert_blocked(db, "trap.test", "subdomain generator: 50 of 50 failed")
    run = hostcrawl("blocked", "list")
    assert run.stdout == "trap.test\tsubdomain generator: 50 of 50 failed\n"
    run = hostcrawl("blocked", "unblock", "TRAP.test")
    assert run.returncode == 0, run.stderr
    assert "TRAP.test → trap.test: unblocked" in run.stdout
    assert hostcrawl("blocked", "list").stdout == ""


def test_user_create_reads_password_from_stdin(db):
    run = hostcrawl("user", "create", "alice", stdin="correct horse battery\n")
    assert run.returncode == 0, run.stderr
    with db.connect() as conn:
        stored = conn.execute(text("SELECT password_hash FROM users")).scalar()
    assert stored.startswith("$argon2id$")
    assert_refused(hostcrawl("user", "create", "alice", stdin="another password\n"), "exists")
    assert_refused(hostcrawl("user", "create", "bob", stdin="short\n"), "at least")


def test_database_outage_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://nobody@/none?host=/nonexistent")
    assert_refused(hostcrawl_process("no-follow", "list"), "database unavailable")


# -- one error style, names after '--', DATABASE_URL -------------------------------


def test_a_name_starting_with_a_dash_goes_after_double_dash(db):
    run = hostcrawl("no-follow", "add", "a.test", "-bad.test")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith("error: no such option: -b") and "'--'" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert deny_entries.deny_entries(db) == []
    run = hostcrawl("no-follow", "add", "a.test", "--", "-bad.test")
    assert "a.test: added" in run.stdout
    assert_refused(run, "error: '-bad.test'")  # now a name, refused for what it is


@pytest.mark.parametrize(
    "args",
    [("no-follow", "add"), ("no-such-command",), ("seed",), ("no-follow", "add", "--nope")],
)
def test_every_error_is_one_line_in_one_style(database_url, args):
    run = hostcrawl(*args)
    assert run.returncode in (1, 2), run
    assert run.stderr.startswith("error: "), run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "Error:" not in run.stderr


@pytest.mark.parametrize(
    ("url", "says"),
    [("mysql://u:pw@h/db", "mysql:// is not Postgres"), ("nonsense", "not a URL")],
)
def test_a_malformed_database_url_is_one_line(monkeypatch, url, says):
    monkeypatch.setenv("DATABASE_URL", url)
    run = hostcrawl("no-follow", "list")
    assert_refused(run, "error: DATABASE_URL", says, "postgres://")
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_a_postgres_scheme_url_is_accepted(monkeypatch, database_url):
    monkeypatch.setenv("DATABASE_URL", database_url.replace("postgresql+psycopg://", "postgres://"))
    run = hostcrawl("no-follow", "list")
    assert run.returncode == 0, run.stderr


# -- hostcrawl user list|disable|enable|password|unlock|delete, create --role -----


def user_row(db, name: str):
    with db.connect() as conn:
        return conn.execute(
            text(
                "SELECT role, disabled_at IS NOT NULL AS disabled, session_generation,"
                " password_hash FROM users WHERE username = :u"
            ),
            {"u": name},
        ).first()


def test_user_create_is_an_admin_unless_told_otherwise(db):
    assert hostcrawl("user", "create", "ada", stdin="correct horse battery\n").returncode == 0
    run = hostcrawl("user", "create", "val", "--role", "viewer", stdin="correct horse battery\n")
    assert run.returncode == 0 and "val created (viewer)" in run.stdout
    assert user_row(db, "ada").role == "admin" and user_row(db, "val").role == "viewer"
    bad = hostcrawl("user", "create", "eve", "--role", "root", stdin="correct horse battery\n")
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "'root'" in bad.stderr


def test_user_commands_manage_an_operator(db):
    hostcrawl("user", "create", "ada", stdin="correct horse battery\n")
    hostcrawl("user", "create", "val", "--role", "viewer", stdin="correct horse battery\n")
    hostcrawl("user", "token", "ada")
    listed = hostcrawl("user", "list").stdout.splitlines()
    assert listed == [
        "ada\tadmin\tenabled\ttoken\t0 failed logins",
        "val\tviewer\tenabled\tno token\t0 failed logins",
    ]

    generation = user_row(db, "ada").session_generation
    run = hostcrawl("user", "disable", "ada")
    assert run.returncode == 0 and "API token is revoked" in run.stdout
    ada = user_row(db, "ada")
    assert ada.disabled and ada.session_generation == generation + 1
    assert "\tdisabled " in hostcrawl("user", "list").stdout.splitlines()[0]
    assert hostcrawl("user", "enable", "ada").returncode == 0
    assert not user_row(db, "ada").disabled
    assert "\tno token\t" in hostcrawl("user", "list").stdout.splitlines()[0]  # not back
    hostcrawl("user", "token", "ada")
    run = hostcrawl("user", "token", "--revoke", "ada")
    assert run.returncode == 0 and run.stdout == "API token of ada revoked\n"
    assert "\tno token\t" in hostcrawl("user", "list").stdout.splitlines()[0]
    assert hostcrawl("user", "token", "--revoke", "nobody").returncode == 1

    old_hash = user_row(db, "ada").password_hash
    run = hostcrawl("user", "password", "ada", stdin="another good password\n")
    assert run.returncode == 0 and "sessions ended" in run.stdout
    ada = user_row(db, "ada")
    assert ada.password_hash != old_hash and ada.session_generation == generation + 2
    assert_refused(hostcrawl("user", "password", "ada", stdin="short\n"), "at least")

    with db.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO login_failures (username, address, failures)"
                " VALUES ('ada', '192.0.2.1', 7), ('ada', '192.0.2.2', 3)"
            )
        )
    assert hostcrawl("user", "list").stdout.splitlines()[0].endswith("10 failed logins")
    run = hostcrawl("user", "unlock", "ada")
    assert run.returncode == 0 and "forgotten" in run.stdout
    assert hostcrawl("user", "list").stdout.splitlines()[0].endswith("0 failed logins")

    assert hostcrawl("user", "delete", "val").returncode == 0
    assert user_row(db, "val") is None
    for command in ("disable", "enable", "unlock", "delete", "token"):
        assert_refused(hostcrawl("user", command, "nobody"), "error: 'nobody': no such user")
    assert_refused(hostcrawl("user", "password", "nobody", stdin="long enough pw\n"), "no such")


def test_a_database_without_the_schema_is_one_line(engine, monkeypatch):
    from sqlalchemy.engine import make_url

    name = "hostcrawl_cli_unmigrated"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        url = make_url(engine.url.render_as_string(hide_password=False)).set(database=name)
        monkeypatch.setenv("DATABASE_URL", url.render_as_string(hide_password=False))
        run = hostcrawl("seed", "a.test")
        assert_refused(run, "error: the database has no schema yet: run `hostcrawl db upgrade`")
        assert len(run.stderr.strip().splitlines()) == 1
    finally:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
