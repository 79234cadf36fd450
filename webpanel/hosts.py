"""/ (the discovered hosts and the dashboard strip) and /hosts/<name> (one host)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    redirect,
    render_template,
    stream_with_context,
    url_for,
)

from crawler.core.hostnames import HostnameError, normalize
from crawler.core.outcomes import ALL as OUTCOMES
from crawler.core.outcomes import MEANINGS as OUTCOME_MEANINGS
from crawler.db.crawl.retention import MINUTES_KEPT
from crawler.db.deployments import deployment_of
from crawler.db.operators import export as host_export
from crawler.db.operators.host_filter import MATCHES, HostFilter
from crawler.db.rules.deny_entries import current_denial
from webpanel.dashboard_cache import cached_dashboard
from webpanel.extensions import db
from webpanel.queries import deny_lists, host_rows, paging, worker_rows
from webpanel.queries import health as health_page
from webpanel.view_helpers import arg, choice, engine, search_page

bp = Blueprint("hosts", __name__)

SORT_LABELS = {
    "name": "hostname A→Z",
    "newest": "newest first",
    "oldest": "oldest first",
}


def host_filter() -> HostFilter:
    """The list's search and filters from this request's query (the page, its CSV, the API)."""
    return HostFilter(
        q=arg("q"),
        match=choice("match", MATCHES),
        outcome=arg("outcome", limit=32),
        root=arg("root"),
        sort=choice("sort", host_rows.HOST_SORTS),
        since=since_arg(),
    )


def since_arg() -> datetime | None:
    """?since= (ISO 8601; UTC unless it says otherwise), or 400."""
    value = arg("since", limit=40)
    if not value:
        return None
    try:
        since = datetime.fromisoformat(value)
    except ValueError:
        abort(400, description="since: a date or time in ISO 8601, e.g. 2026-11-30T12:00")
    return since if since.tzinfo else since.replace(tzinfo=UTC)


@bp.get("/")
def index():
    """Hosts never under a blocked or no_follow entry: search, filters, sort, keyset pages."""
    flt = host_filter()
    page, error = search_page(host_rows.host_page, flt)
    figures = cached_dashboard()
    outcomes = sorted({o for o, _ in figures.outcomes if o} | set(OUTCOMES))
    with db.engine.connect() as conn:  # live, not cached with the figures: a few rows
        workers = worker_rows.workers(conn)
    hidden, rules = hidden_by_entries(page, error, flt)
    health = health_figures()
    return render_template(
        "hosts/index.html",
        page=page,
        flt=flt,
        error=error,
        # The strip's due now is the row's, read now: one count on the page, not two.
        stats=replace(figures, due_now=health["health"].due_now),
        outcomes=outcomes,
        sorts=SORT_LABELS,
        workers=workers,
        hidden=hidden,
        rules=rules,
        **health,
    )


def hidden_by_entries(page: paging.Page, error: str | None, flt: HostFilter):
    """An empty list's hidden matches (host_rows.hidden_matches) and their entries' rules:
    what the deny entries took of it. (None, {}) when the list shows hosts."""
    if page.rows or error or page.prev:
        return None, {}
    hidden = host_rows.hidden_matches(db.session, flt)
    return hidden, deny_lists.entry_rules(db.session, [name for name, _ in hidden.entries])


@bp.get("/health-row")
def health_row():
    """The dashboard's health row alone (an HTML fragment): static/health.js swaps it in."""
    return render_template("hosts/_health.html", **health_figures())


def health_figures() -> dict:
    """What the health row shows, read now (never cached: its rows are few)."""
    with db.engine.connect() as conn:
        figures = health_page.health(conn)
    return {
        "health": figures,
        "every": current_app.config["HEALTH_REFRESH_SECONDS"],
        "share_minutes": health_page.SHARE_MINUTES,
        "minutes_kept": MINUTES_KEPT,
    }


@bp.get("/hosts/export.csv")
def export():
    """The list's hosts for the current search and filters, every page, as CSV (streamed
    from COPY; cells a spreadsheet would run are neutralised)."""
    flt = host_filter()
    try:
        flt.conditions(deployment_of(engine()))  # a bad search or root: 400 now, not mid-download
    except HostnameError as exc:
        abort(400, description=str(exc))
    chunks = host_export.csv_chunks(engine(), flt)
    headers = {"Content-Disposition": "attachment; filename=hosts.csv"}
    return Response(stream_with_context(chunks), mimetype="text/csv", headers=headers)


@bp.get("/hosts/<hostname>")
def detail(hostname: str):
    """One host's crawl facts, its next claim and the deny entry over it, if any."""
    try:
        name = normalize(hostname)
    except HostnameError:
        abort(404)
    if name != hostname:
        return redirect(url_for("hosts.detail", hostname=name))
    host = host_rows.host_detail(db.session, name)
    if host is None:
        abort(404)
    denial = current_denial(db.session, name)
    return render_template(
        "hosts/detail.html",
        host=host,
        denial=denial,
        meaning=OUTCOME_MEANINGS.get(host.outcome),
        held_meaning=OUTCOME_MEANINGS.get(host.held_outcome),
    )
