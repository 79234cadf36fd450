"""/audit: every change to the deny entries — who, what, when — newest first."""

from __future__ import annotations

from flask import Blueprint, abort, render_template

from webpanel.extensions import db
from webpanel.queries import change_item_rows, change_rows
from webpanel.view_helpers import arg, fetch_page, search_page

bp = Blueprint("change_log", __name__)


@bp.get("/audit")
def index():
    """The change log, filtered by hostname prefix, action and actor; keyset pages."""
    q, action, who = arg("q"), arg("action", limit=32), arg("actor", limit=128)
    page, error = search_page(change_rows.change_page, q=q, action=action, actor=who)
    actions = change_rows.change_actions(db.session)
    return render_template(
        "change_log/index.html",
        page=page,
        q=q,
        action=action,
        actor=who,
        actions=actions,
        error=error,
    )


@bp.get("/audit/<int:change_id>/items")
def items(change_id: int):
    """The names of one bulk change (its change-log row gives the count), keyset pages."""
    row = change_item_rows.change_row(db.session, change_id)
    if row is None:
        abort(404)
    page = fetch_page(change_item_rows.item_page, change_id, size=200)
    return render_template("change_log/items.html", row=row, page=page)
