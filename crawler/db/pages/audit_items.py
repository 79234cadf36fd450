"""The names of one bulk change (`/audit/<id>/items`): its audit row counts them,
one audit_items row holds them as arrays (migration 0008)."""

from __future__ import annotations

from sqlalchemy import func, select, true

from crawler.db.models import AuditEntry, AuditItems
from crawler.db.pages.paging import DEFAULT_LIMIT, Order, Page, paginate

ITEMS = (
    func.unnest(AuditItems.names, AuditItems.details)
    .table_valued("hostname", "detail")
    .render_derived("items")
)
ITEM_ORDER = Order((ITEMS.c.hostname,), ("str",))


def audit_row(conn, audit_id: int):
    """The audit row itself, or None."""
    return conn.execute(select(AuditEntry).where(AuditEntry.id == audit_id)).scalar_one_or_none()


def item_page(
    conn,
    audit_id: int,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """The batch's names by hostname, with each one's detail (a note, a former reason)."""
    stmt = (
        select(ITEMS.c.hostname, ITEMS.c.detail)
        .select_from(AuditItems)
        .join(ITEMS, true())
        .where(AuditItems.audit_id == audit_id)
    )
    return paginate(conn, stmt, ITEM_ORDER, after, before, limit)
