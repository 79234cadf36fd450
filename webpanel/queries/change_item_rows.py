"""The names of one batch of a change (`/audit/<id>/items`): its change-log row counts
them, one change_log_items row holds them as arrays (migration 0008)."""

from __future__ import annotations

from sqlalchemy import func, select, true

from crawler.db.models import ChangeLogEntry, ChangeLogItems
from webpanel.queries.paging import DEFAULT_LIMIT, Order, Page, paginate

ITEMS = (
    func.unnest(ChangeLogItems.names, ChangeLogItems.details)
    .table_valued("hostname", "detail")
    .render_derived("items")
)
ITEM_ORDER = Order((ITEMS.c.hostname,), ("str",))


def change_row(conn, change_id: int):
    """The change-log row itself, or None."""
    return conn.execute(
        select(ChangeLogEntry).where(ChangeLogEntry.id == change_id)
    ).scalar_one_or_none()


def item_page(
    conn,
    change_id: int,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """The batch's names by hostname, with each one's detail (a note, a former reason)."""
    stmt = (
        select(ITEMS.c.hostname, ITEMS.c.detail)
        .select_from(ChangeLogItems)
        .join(ITEMS, true())
        .where(ChangeLogItems.change_id == change_id)
    )
    return paginate(conn, stmt, ITEM_ORDER, after, before, limit)
