"""The server settings docs/scaling.md advises (crawler/core/server_advice.py), on a real
server: what the embedded one is sized for, a server's values (pg_settings), ALTER SYSTEM,
and which settings of a server behind DATABASE_URL fall short (`hostcrawl db status`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, bindparam, create_engine, text
from sqlalchemy.pool import NullPool

from crawler.core import config, server_advice
from crawler.core.server_advice import Current, Memory, Shortfall
from crawler.db.server import machine


def embedded_memory(environ: Mapping[str, str] | None = None) -> Memory:
    """The memory the embedded server is sized for: EMBEDDED_DATABASE_MEMORY_MB, or this
    machine's less what `make run`'s workers keep."""
    environ = os.environ if environ is None else environ
    return server_advice.database_memory(
        machine.memory_mb(),
        machine.worker_count(environ),
        config.from_environment("MEMORY_BUDGET_MB", environ),
        config.from_environment("EMBEDDED_DATABASE_MEMORY_MB", environ),
    )


CURRENT = text(
    "SELECT name, setting, unit, enumvals FROM pg_settings WHERE name IN :names"
).bindparams(bindparam("names", expanding=True))


def current_settings(conn: Connection) -> dict[str, Current]:
    """The server's value of each advised setting (bytes, seconds or a word)."""
    rows = conn.execute(CURRENT, {"names": list(server_advice.NAMES)})
    return {
        name: Current(server_advice.server_value(setting, unit), tuple(offered or ()))
        for name, setting, unit, offered in rows
    }


# The indexes of the database's own schema: what shared_buffers should hold (on a Citus
# coordinator only its own part: the shards' are on the workers).
INDEX_BYTES = text(
    "SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) FROM pg_index i"
    " JOIN pg_class c ON c.oid = i.indexrelid"
    " WHERE c.relnamespace = current_schema()::regnamespace"
)


def shortfalls(url: str) -> list[Shortfall]:
    """Which settings of the server at `url` fall short of the advice; changes nothing."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            current = current_settings(conn)
            index_bytes = conn.execute(INDEX_BYTES).scalar()
    finally:
        engine.dispose()
    return server_advice.shortfalls(current, index_bytes)


@dataclass(frozen=True)
class Tuning:
    """What the embedded server was given on this start, and what waits for the next one."""

    memory: Memory
    values: dict[str, int | str]
    waiting: tuple[str, ...] = ()  # settings that need a restart, not in effect yet
    other_users: int = 0  # why they wait: processes or sessions sharing the server

    def describe(self) -> str:
        line = server_advice.describe_embedded(self.memory, self.values)
        if self.waiting:
            line += (
                f"; {', '.join(self.waiting)} only at the next start: {self.other_users}"
                " other process(es) or session(s) use the server now"
            )
        return line


def changed_settings(conn: Connection, memory: Memory) -> tuple[dict[str, int | str], dict]:
    """The advised values for `memory`, and those of them the running server lacks."""
    current = current_settings(conn)
    values = server_advice.embedded_settings(memory.mb, current)
    changed = {
        name: value
        for name, value in values.items()
        if name not in current or current[name].value != value
    }
    return values, changed


def set_system(conn: Connection, settings: Mapping[str, int | str]) -> None:
    """ALTER SYSTEM each setting, then reload the configuration (one that needs a restart
    waits for the next start). `conn` is in autocommit: ALTER SYSTEM refuses a transaction."""
    write_system(
        conn, {name: server_advice.alter_text(name, value) for name, value in settings.items()}
    )


def write_system(conn: Connection, texts: Mapping[str, str]) -> None:
    """ALTER SYSTEM each setting to its text as Postgres takes it, and reload once."""
    for name, value in texts.items():
        conn.exec_driver_sql(f"ALTER SYSTEM SET {name} = '{value}'")
    if texts:
        conn.exec_driver_sql("SELECT pg_reload_conf()")


def alter_system(url: str, settings: Mapping[str, str]) -> bool:
    """ALTER SYSTEM each setting (as Postgres writes it: 6GB, 15min) the server does not
    show yet, and reload; whether any changed (the benchmarks' own server settings)."""
    engine = autocommit_engine(url)
    try:
        with engine.connect() as conn:
            changed = {
                name: value
                for name, value in settings.items()
                if conn.exec_driver_sql(f"SHOW {name}").scalar() != value
            }
            write_system(conn, changed)
    finally:
        engine.dispose()
    return bool(changed)


OTHER_SESSIONS = text(
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
)


def other_sessions(conn: Connection) -> int:
    return conn.execute(OTHER_SESSIONS).scalar()


def autocommit_engine(url: str) -> Engine:
    return create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
