"""/ (the discovered hosts and the dashboard strip) and /hosts/<name> (one host)."""

from __future__ import annotations

from flask import Blueprint, abort, redirect, render_template, url_for

from crawler.db.entries import current_denial
from crawler.db.pages import hosts as host_pages
from crawler.db.pages import paging
from crawler.hostnames import HostnameError, normalize
from crawler.outcomes import ALL as OUTCOMES
from webpanel.core import arg, choice, search_page, stats
from webpanel.extensions import db

bp = Blueprint("hosts", __name__)

SORT_LABELS = {
    "name": "hostname A→Z",
    "newest": "newest first",
    "oldest": "oldest first",
}


@bp.get("/")
def index():
    """Hosts never under a blocked or no_follow entry: search, filters, sort, keyset pages."""
    flt = host_pages.HostFilter(
        q=arg("q"),
        match=choice("match", paging.MATCHES),
        outcome=arg("outcome", limit=32),
        root=arg("root"),
        sort=choice("sort", host_pages.HOST_SORTS),
    )
    page, error = search_page(host_pages.host_page, flt)
    figures = stats()
    outcomes = sorted({o for o, _ in figures.outcomes if o} | set(OUTCOMES))
    return render_template(
        "hosts/index.html",
        page=page,
        flt=flt,
        error=error,
        stats=figures,
        outcomes=outcomes,
        sorts=SORT_LABELS,
    )


@bp.get("/hosts/<hostname>")
def detail(hostname: str):
    """One host's crawl facts, its next claim and the deny entry over it, if any."""
    try:
        name = normalize(hostname)
    except HostnameError:
        abort(404)
    if name != hostname:
        return redirect(url_for("hosts.detail", hostname=name))
    host = host_pages.host_detail(db.session, name)
    if host is None:
        abort(404)
    denial = current_denial(db.session, name)
    return render_template("hosts/detail.html", host=host, denial=denial)
