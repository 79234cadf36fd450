"""/blocked: hosts blocked as traps, with blocked_reason and the window's evidence; unblock."""

from __future__ import annotations

from flask import Blueprint, render_template

from crawler.core.denylist import BLOCKED
from crawler.core.traps import reason_parts
from crawler.db.operators.host_filter import MATCHES
from crawler.db.rules import deny_entries
from webpanel.entry_lift import confirm_and_lift
from webpanel.extensions import db
from webpanel.queries import deny_lists
from webpanel.view_helpers import arg, choice, search_page

bp = Blueprint("blocked", __name__, url_prefix="/blocked")
PAGE_SIZE = 25  # each row carries a long reason and its evidence


@bp.app_template_filter("reason_parts")
def reason_parts_filter(reason: str | None) -> tuple[str, list[str]]:
    """A blocked_reason as (one-line headline, details) for blocked/_reason.html."""
    return reason_parts(reason or "")


@bp.get("")
def index():
    """Blocked entries (search, keyset pages), each with its reason and trap evidence."""
    q, match = arg("q"), choice("match", MATCHES)
    page, error = search_page(deny_lists.entry_page, BLOCKED, q, match, size=PAGE_SIZE)
    evidence = deny_lists.window_evidence(db.session, [row.hostname for row in page.rows])
    return render_template(
        "blocked/index.html", page=page, q=q, match=match, error=error, evidence=evidence
    )


@bp.route("/<hostname>/unblock", methods=["GET", "POST"])
def unblock(hostname: str):
    """Lift a block after a confirmation, shown beside the trap window's evidence; the
    hosts it took out come back into routing."""

    def evidence() -> dict:
        return {"evidence": deny_lists.window_evidence(db.session, [hostname]).get(hostname)}

    return confirm_and_lift(
        BLOCKED, hostname, deny_entries.unblock, "blocked/unblock.html", evidence
    )
