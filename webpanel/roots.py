"""/roots: every root's hosts, trap window, budget use and wildcard flag; a root's page.

A wildcard zone is only flagged (blocks stay reserved for the trap rule): its
page offers one button that puts the root on no_follow, logged in the change log like any
other entry. webpanel.queries.root_rows gives the rows; their words and JSON are here.
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for

from crawler.core.denylist import BLOCKED
from crawler.core.hostnames import HostnameError, normalize
from crawler.db.operators.host_filter import MATCHES
from crawler.db.rules import deny_entries
from webpanel.extensions import db
from webpanel.forms import EmptyForm
from webpanel.queries import root_rows
from webpanel.view_helpers import actor, arg, choice, engine, fetch_page, search_page

bp = Blueprint("roots", __name__, url_prefix="/roots")
WILDCARD_NOTE = "wildcard zone (a random name under it resolves), from /roots"
SORT_LABELS = {
    "hosts": "most hosts first",
    "near_block": "nearest a block first",
    "failed": "most failed first",
    "name": "root A→Z",
}


@bp.app_template_filter("window_text")
def window_text(line: root_rows.RootLine) -> str:
    """'38 of the last 50 failed' (or of fewer, while the window fills; none after an unblock)."""
    if not line.window_size:
        return "no subdomain in the window yet"
    return f"{line.window_failed} of the last {line.window_size} failed"


def near_block(line: root_rows.RootLine, threshold: int) -> bool:
    """Its window is failing and nothing stops it yet: a root under an entry is not
    crawled, so it cannot come nearer a block (a blocked one is there already)."""
    return line.entry is None and line.window_failed >= threshold


@bp.app_template_filter("window_flag")
def window_flag(line: root_rows.RootLine, threshold: int) -> str:
    """The trap window's flag: 'blocked' (its entry, or one over it, is a block), 'near a
    block', or none."""
    if line.entry_rule == BLOCKED:
        return "blocked"
    return "near a block" if near_block(line, threshold) else ""


@bp.app_template_filter("due_text")
def due_text(line: root_rows.RootLine) -> str:
    return f"{line.due:,}+" if line.due_capped else f"{line.due:,}"


def root_json(line: root_rows.RootLine, budget: int, threshold: int) -> dict:
    """One root as GET /api/roots gives it."""
    return {
        "root": line.root,
        "hosts": line.hosts,
        "due": line.due,
        "due_capped": line.due_capped,
        "crawled_ok": line.crawled_ok,
        "failed": line.failed,
        "window": {"failed": line.window_failed, "size": line.window_size},
        "near_block": near_block(line, threshold),
        "blocked": line.entry_rule == BLOCKED,
        "claimed_this_hour": line.claimed_hour,
        "budget": budget,
        "held_until": line.held_until.isoformat() if line.held_until else None,
        "wildcard": line.wildcard,
        "wildcard_probe": (
            {"name": line.probe, "outcome": line.probe_outcome} if line.probe else None
        ),
        "entry": {"hostname": line.entry, "rule": line.entry_rule} if line.entry else None,
    }


def root_budget() -> int:
    """ROOT_BUDGET, read from the same settings table and environment as the crawlers'."""
    return current_app.config["ROOT_BUDGET"]


def root_filter() -> root_rows.RootFilter:
    return root_rows.RootFilter(
        q=arg("q"),
        match=choice("match", MATCHES),
        wildcards=request.args.get("wildcards") == "1",
        sort=choice("sort", SORT_LABELS),
    )


@bp.get("")
def index():
    """Roots with their counts, window, budget use and wildcard flag: search, sort, pages."""
    flt = root_filter()
    page, error = search_page(root_rows.root_page, flt)
    return render_template(
        "roots/index.html",
        page=page,
        flt=flt,
        error=error,
        sorts=SORT_LABELS,
        budget=root_budget(),
        near_block=current_app.config["TRAP_NEAR_BLOCK"],
        window=current_app.config["TRAP_WINDOW"],
        form=EmptyForm(),
    )


@bp.get("/<hostname>")
def detail(hostname: str):
    """One root: its line, its trap window and its subdomains (keyset pages)."""
    domain = canonical(hostname)
    line = root_rows.root_line(db.session, domain)
    if line is None:
        abort(404)
    page = fetch_page(root_rows.subdomain_page, domain)
    window = root_rows.window(db.session, domain, current_app.config["TRAP_WINDOW"])
    return render_template(
        "roots/detail.html",
        line=line,
        page=page,
        window=window,
        budget=root_budget(),
        near_block=current_app.config["TRAP_NEAR_BLOCK"],
        form=EmptyForm(),
    )


@bp.post("/<hostname>/no-follow")
def no_follow(hostname: str):
    """One click: the root goes on no_follow (logged in the change log); crawlers hear at once."""
    domain = canonical(hostname)
    if root_rows.root_line(db.session, domain) is None:
        abort(404)
    form = EmptyForm()
    if not form.validate_on_submit():
        abort(400)
    (change,) = deny_entries.add_no_follow(engine(), [domain], actor(), note=WILDCARD_NOTE)
    flash(change.describe())
    return redirect(url_for("roots.detail", hostname=domain))


def canonical(hostname: str) -> str:
    """The root's stored name; 404 for anything that is no hostname."""
    try:
        return normalize(hostname)
    except HostnameError:
        abort(404)
