"""The audit log (`/audit`)."""

from __future__ import annotations

from sqlalchemy import (
    literal,
    select,
    text,
)

from crawler.db.models import AuditEntry
from crawler.db.pages.paging import (
    DEFAULT_LIMIT,
    PREFIX,
    Order,
    Page,
    paginate,
    search_condition,
)

# -- the audit log --------------------------------------------------------------------

AUDIT_ORDER = Order((AuditEntry.id,), ("int",), descending=True)


def audit_page(
    conn,
    q: str = "",
    action: str = "",
    actor: str = "",
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """Audit entries, newest first; q is a hostname prefix."""
    stmt = select(
        AuditEntry.id,
        AuditEntry.at,
        AuditEntry.actor,
        AuditEntry.action,
        AuditEntry.hostname,
        AuditEntry.detail,
    )
    searched = search_condition(AuditEntry.hostname, literal(""), q, PREFIX)
    if searched is not None:
        stmt = stmt.where(searched)
    if action:
        stmt = stmt.where(AuditEntry.action == action)
    if actor:
        stmt = stmt.where(AuditEntry.actor == actor)
    return paginate(conn, stmt, AUDIT_ORDER, after, before, limit)


def audit_actions(conn) -> list[str]:
    return list(conn.execute(text("SELECT DISTINCT action FROM audit_log ORDER BY 1")).scalars())
