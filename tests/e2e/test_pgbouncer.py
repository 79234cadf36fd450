"""The crawl and the panel through PgBouncer in transaction mode (docs/scaling.md).

What the code needs behind a transaction pooler, and what this checks:
DATABASE_POOLED=1 (no server-side prepared statements: psycopg prepares a
statement on its 5th run, and the next transaction may get another server
connection) and DATABASE_LISTEN_URL straight to Postgres (LISTEN needs a
session of its own). Debian's pgbouncer runs on loopback in front of the test
database; a real `scrapy crawl hosts` discovers a fakeweb graph through it,
and the panel serves pages through it. Every transaction is counted by
PgBouncer's own SHOW STATS.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from crawler.db.server.listener import conninfo
from tests.e2e.conftest import known_hosts, wait_until
from tests.fakeweb import World
from tests.unit.test_panel_support import SECRET
from webpanel.security import LOGGED_IN_AT

pytest_plugins = ["tests.unit.test_panel_support"]

BINARY = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"

if not Path(BINARY).exists():
    why = "pgbouncer tests: pgbouncer not found (apt-get install pgbouncer)"
    # A developer without it gets one skip line; CI (HOSTCRAWL_REQUIRE_PGBOUNCER=1) must not.
    if os.environ.get("HOSTCRAWL_REQUIRE_PGBOUNCER"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why, allow_module_level=True)

INI = """\
[databases]
{db} = host={host} port={port} dbname={db} user={user} {password}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = any
admin_users = {user}
pool_mode = transaction
max_client_conn = 200
default_pool_size = 8
ignore_startup_parameters = extra_float_digits, options
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bouncer:
    """A pgbouncer process in front of `url`; `url` of its own; SHOW STATS."""

    def __init__(self, url: str, workdir: Path, logdir: Path) -> None:
        target = make_url(url)
        host = target.query.get("host") or target.host or "127.0.0.1"
        self.user, self.db = target.username, target.database
        self.port = free_port()
        password = f"password={target.password}" if target.password else ""
        ini = workdir / "pgbouncer.ini"
        ini.write_text(
            INI.format(
                db=self.db,
                host=host,
                port=target.port or 5432,
                user=self.user,
                password=password,
                listen=self.port,
            )
        )
        command = [BINARY, str(ini)]
        if os.geteuid() == 0:  # pgbouncer refuses root: run as the database's own user
            owner = pwd.getpwuid(Path(host).stat().st_uid).pw_name if host.startswith("/") else ""
            owner = owner if owner and owner != "root" else "nobody"
            shutil.chown(workdir, owner)
            command += ["-u", owner]
        self.log = logdir / "pgbouncer.log"
        with open(self.log, "w") as log:  # its log goes to stderr
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self.url = target.set(host="127.0.0.1", port=self.port, password=None, query={})
        self.url = self.url.render_as_string(hide_password=False)
        wait_until(self.answers, 20, "pgbouncer to accept connections")

    def answers(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"pgbouncer exited: {self.log.read_text()[-2000:]}")
        try:
            self.transactions()
        except psycopg.OperationalError:
            return False
        return True

    def transactions(self) -> int:
        """Transactions PgBouncer has passed to the test database so far."""
        with psycopg.connect(
            host="127.0.0.1", port=self.port, dbname="pgbouncer", user=self.user, autocommit=True
        ) as conn:
            conn.prepare_threshold = None
            rows = conn.execute("SHOW STATS").fetchall()
            names = [c.name for c in conn.execute("SHOW STATS").description]
        stats = [dict(zip(names, row, strict=True)) for row in rows]
        return sum(int(s["total_xact_count"]) for s in stats if s["database"] == self.db)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


@pytest.fixture
def bouncer(database_url, tmp_path, monkeypatch):
    """PgBouncer (transaction mode) in front of the test database; this process and the
    crawlers it starts are configured as docs/scaling.md says."""
    # Its config where the database's user can read it (pytest's tmp_path is root's only).
    workdir = Path(tempfile.mkdtemp(prefix="hostcrawl-pgbouncer-"))
    bouncer = Bouncer(database_url, workdir, tmp_path)
    monkeypatch.setenv("DATABASE_URL", bouncer.url)
    monkeypatch.setenv("DATABASE_POOLED", "1")
    monkeypatch.setenv("DATABASE_LISTEN_URL", database_url)
    yield bouncer
    bouncer.stop()
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.one_server("the PgBouncer fixture pools the one server's test database")
def test_the_crawl_works_through_pgbouncer(db, bouncer, fakeweb_factory, crawl):
    world = World(seed=15)
    names = world.graph(80, roots=["pool-a.test", "pool-b.test"], links_per_page=4)
    web = fakeweb_factory(world)
    queue.seed(db, [names[0]])
    before = bouncer.transactions()

    crawl(web)

    assert known_hosts(db) == set(names)
    with db.connect() as conn:
        crawled = conn.execute(text("SELECT count(*) FROM hosts WHERE outcome = 'OK'")).scalar()
    assert crawled == len(names)
    # Claims, finishes and window writes all went through PgBouncer.
    assert bouncer.transactions() - before > len(names) // 4


@pytest.mark.one_server("the PgBouncer fixture pools the one server's test database")
def test_the_panel_works_through_pgbouncer(db, bouncer, operators):
    from webpanel import create_app

    queue.save_hosts(db, ["www.pooled.test", "pooled.test"])
    deny_entries.add_no_follow(db, ["elsewhere.test"])
    # The documented setup and nothing else: the fixture's DATABASE_URL, DATABASE_POOLED=1
    # and DATABASE_LISTEN_URL in the environment; no engine options of the test's own.
    app = create_app({"SECRET_KEY": SECRET, "STATS_TTL": 0})
    assert app.config["SQLALCHEMY_DATABASE_URI"] == bouncer.url
    client = app.test_client()
    with client.session_transaction() as session:
        session["_user_id"] = f"{operators['alice']}.1"
        session["_fresh"] = True
        session[LOGGED_IN_AT] = int(time.time())
    before = bouncer.transactions()
    for _ in range(8):  # past psycopg's prepare threshold, on whichever server connection
        page = client.get("/")
        assert page.status_code == 200 and "www.pooled.test" in page.get_data(as_text=True)
    assert "elsewhere.test" in client.get("/no_follow").get_data(as_text=True)
    assert bouncer.transactions() - before >= 9
    create_engine(bouncer.url).dispose()


def test_listening_goes_straight_to_postgres(bouncer, database_url):
    """LISTEN through a transaction pooler would hear nothing: the listener's own URL."""
    engine = create_engine(bouncer.url)
    assert str(make_url(conninfo(engine)).port) != str(bouncer.port)
    assert make_url(conninfo(engine)).query == make_url(database_url).query


def test_compose_offers_the_same_setup_as_an_optional_profile():
    import yaml

    from crawler.db.server.engine import PROJECT_ROOT

    services = yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())["services"]
    bouncer, pooled = services["pgbouncer"], services["crawler-pooled"]
    assert bouncer["profiles"] == pooled["profiles"] == ["pgbouncer"]
    assert "profiles" not in services["crawler"]  # the default stack stays direct
    assert bouncer["environment"]["POOL_MODE"] == "transaction"
    env = pooled["environment"]
    assert env["DATABASE_POOLED"] == "1"
    assert "@pgbouncer:6432/" in env["DATABASE_URL"]
    assert "@db:5432/" in env["DATABASE_LISTEN_URL"]
