"""A deny-entry change's trace (crawler.db.rules.deny_entries): its change-log row, and
word to workers.

One name reads as it always has: the name, and the note or reason. A batch's change-log
row holds its count; its names go to one change_log_items row (arrays: a batch of 20,000
names costs one row to log). Listening workers hear of each name in a small batch, and
get one "reload" for a big one (crawler.db.server.listener). Both are written in the change's
transaction, so workers hear of it when, and only when, it commits.
"""

from __future__ import annotations

import json

from sqlalchemy import Connection, text

from crawler.core.words import counted
from crawler.db.operators import change_log
from crawler.db.server.sql_pieces import names_param

DENYLIST_CHANNEL = "hostcrawl_denylist"

NOTIFY_EACH_UP_TO = 100  # more names than this: one "reload" instead of a NOTIFY each

CHANGE_ITEMS = text(
    "INSERT INTO change_log_items (change_id, names, details) VALUES (:id, :names, :details)"
).bindparams(*names_param("names", "details"))
CHANGE_STAGED = text(
    "INSERT INTO change_log_items (change_id, names, details)"
    " SELECT :id, array_agg(hostname ORDER BY hostname), array_agg(note ORDER BY hostname)"
    "   FROM bulk_names"
)
STAGED_NOTES = object()  # record_batch(): the names are the stage's, each with its note
LAST_CHANGE_ID = text("SELECT currval(pg_get_serial_sequence('change_log', 'id'))")


def record_batch(
    conn: Connection,
    actor: str,
    action: str,
    names: list[str],
    details: list[str | None] | object,
    note: str | None,
) -> None:
    """One change-log row for the batch; its names in one change_log_items row if several.

    A single name reads as it always has: the name, and the note or reason.
    """
    if len(names) == 1:
        detail = "; ".join(filter(None, dict.fromkeys([note, details[0]])))  # type: ignore[index]
        change_log.record(conn, actor, action, names[0], detail or None)
        return
    summary = counted(len(names), "name") + (f"; {note}" if note else "")
    change_log.record(conn, actor, action, min(names), summary)
    change_id = conn.execute(LAST_CHANGE_ID).scalar_one()
    if details is STAGED_NOTES:  # the stage holds exactly these names, with their notes
        conn.execute(CHANGE_STAGED, {"id": change_id})
    else:
        conn.execute(CHANGE_ITEMS, {"id": change_id, "names": names, "details": details})


def announce(conn: Connection, change: str, names: list[str], rule: str) -> None:
    """Tell listening workers at commit: each name, or to reload for a big batch."""
    if len(names) <= NOTIFY_EACH_UP_TO:
        for hostname in names:
            notify(conn, change, hostname, rule)
        return
    send(conn, {"change": "reload", "count": len(names), "rule": rule})


def notify(conn: Connection, change: str, hostname: str, rule: str) -> None:
    """Tell every listening worker of one name, when this transaction commits."""
    send(conn, {"change": change, "hostname": hostname, "rule": rule})


def send(conn: Connection, payload: dict) -> None:
    conn.execute(
        text("SELECT pg_notify(:channel, :payload)"),
        {"channel": DENYLIST_CHANNEL, "payload": json.dumps(payload)},
    )
