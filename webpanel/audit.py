"""/audit: every change to the deny entries — who, what, when — newest first."""

from __future__ import annotations

from flask import Blueprint, abort, render_template

from crawler.db.pages import audit as audit_pages
from crawler.db.pages import audit_items
from webpanel.core import arg, fetch_page, search_page
from webpanel.extensions import db

bp = Blueprint("audit", __name__)


@bp.get("/audit")
def index():
    """The audit log, filtered by hostname prefix, action and actor; keyset pages."""
    q, action, who = arg("q"), arg("action", limit=32), arg("actor", limit=128)
    page, error = search_page(audit_pages.audit_page, q=q, action=action, actor=who)
    actions = audit_pages.audit_actions(db.session)
    return render_template(
        "audit/index.html", page=page, q=q, action=action, actor=who, actions=actions, error=error
    )


@bp.get("/audit/<int:audit_id>/items")
def items(audit_id: int):
    """The names of one bulk change (its audit row gives the count), keyset pages."""
    row = audit_items.audit_row(db.session, audit_id)
    if row is None:
        abort(404)
    page = fetch_page(audit_items.item_page, audit_id, size=200)
    return render_template("audit/items.html", row=row, page=page)
