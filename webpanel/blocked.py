"""/blocked: hosts blocked as traps, with blocked_reason and the window's evidence; unblock."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, url_for

from crawler.core.denylist import BLOCKED
from crawler.core.traps import reason_parts
from crawler.db import deny_entries
from crawler.db.pages import deny_lists, paging
from webpanel.core import actor, arg, choice, engine, search_page
from webpanel.extensions import db
from webpanel.forms import ConfirmForm

bp = Blueprint("blocked", __name__, url_prefix="/blocked")
PAGE_SIZE = 25  # each row carries a long reason and its evidence


@bp.app_template_filter("reason_parts")
def reason_parts_filter(reason: str | None) -> tuple[str, list[str]]:
    """A blocked_reason as (one-line headline, details) for blocked/_reason.html."""
    return reason_parts(reason or "")


@bp.get("")
def index():
    """Blocked entries (search, keyset pages), each with its reason and trap evidence."""
    q, match = arg("q"), choice("match", paging.MATCHES)
    page, error = search_page(deny_lists.entry_page, BLOCKED, q, match, size=PAGE_SIZE)
    evidence = deny_lists.window_evidence(db.session, [row.hostname for row in page.rows])
    return render_template(
        "blocked/index.html", page=page, q=q, match=match, error=error, evidence=evidence
    )


@bp.route("/<hostname>/unblock", methods=["GET", "POST"])
def unblock(hostname: str):
    """Lift a block after a confirmation; the hosts it took out come back into routing."""
    found = deny_lists.entry(db.session, BLOCKED, hostname)
    if found is None:
        abort(404)
    form = ConfirmForm()
    if form.validate_on_submit():
        (change,) = deny_entries.unblock(engine(), [hostname], actor(), note=form.note.data)
        flash(change.describe())
        return redirect(url_for("blocked.index"))
    evidence = deny_lists.window_evidence(db.session, [hostname]).get(hostname)
    return render_template("blocked/unblock.html", entry=found, evidence=evidence, form=form)
