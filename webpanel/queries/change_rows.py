"""The change log's rows (`/audit`), newest first; their words are the panel's."""

from __future__ import annotations

from sqlalchemy import (
    literal,
    select,
    text,
)

from crawler.db.models import ChangeLogEntry
from crawler.db.operators.host_filter import PREFIX, search_condition
from webpanel.queries.paging import DEFAULT_LIMIT, Order, Page, paginate

# -- the change log --------------------------------------------------------------------

CHANGE_ORDER = Order((ChangeLogEntry.id,), ("int",), descending=True)


def change_page(
    conn,
    q: str = "",
    action: str = "",
    actor: str = "",
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """Change-log rows, newest first; q is a hostname prefix."""
    stmt = select(
        ChangeLogEntry.id,
        ChangeLogEntry.at,
        ChangeLogEntry.actor,
        ChangeLogEntry.action,
        ChangeLogEntry.hostname,
        ChangeLogEntry.detail,
    )
    searched = search_condition(ChangeLogEntry.hostname, literal(""), q, PREFIX)
    if searched is not None:
        stmt = stmt.where(searched)
    if action:
        stmt = stmt.where(ChangeLogEntry.action == action)
    if actor:
        stmt = stmt.where(ChangeLogEntry.actor == actor)
    return paginate(conn, stmt, CHANGE_ORDER, after, before, limit)


def change_actions(conn) -> list[str]:
    return list(conn.execute(text("SELECT DISTINCT action FROM change_log ORDER BY 1")).scalars())
