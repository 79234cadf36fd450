"""The change log: who changed which entry, when and why (docs/design.md, rule 8)."""

from __future__ import annotations

from sqlalchemy import Connection, text

INSERT = text(
    "INSERT INTO change_log (actor, action, hostname, detail)"
    " VALUES (:actor, :action, :hostname, :detail)"
)


def record(conn: Connection, actor: str, action: str, hostname: str, detail: str | None) -> None:
    """One change-log row, in the transaction of the change it describes."""
    conn.execute(INSERT, {"actor": actor, "action": action, "hostname": hostname, "detail": detail})
