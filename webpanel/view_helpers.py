"""What the views share: the engine and who acts (for the change log), a query argument,
a list's keyset page with its search, and the links to its neighbours."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import abort, current_app, request, url_for
from flask_login import current_user
from sqlalchemy import Engine

from crawler.core.hostnames import HostnameError
from webpanel.extensions import db
from webpanel.queries import paging


def engine() -> Engine:
    """The panel's engine: every write goes through crawler.db's modules with it."""
    return db.engine


def actor() -> str:
    """Who the change log names for this request."""
    return getattr(current_user, "username", None) or "panel"


def arg(name: str, default: str = "", limit: int = 300) -> str:
    return request.args.get(name, default, type=str)[:limit].strip()


def choice(name: str, options, default: str | None = None) -> str:
    """A query argument that must be one of `options` (else the first one)."""
    value = request.args.get(name, "")
    options = list(options)
    return value if value in options else (default or options[0])


def page_args(size: int | None = None) -> dict:
    """after=/before=/n= of a keyset list (n defaults to `size`, else PAGE_SIZE)."""
    size = request.args.get("n", type=int) or size or current_app.config["PAGE_SIZE"]
    return {
        "after": request.args.get("after") or None,
        "before": request.args.get("before") or None,
        "limit": max(1, min(size, paging.MAX_LIMIT)),
    }


def fetch_page(fetch, *args, size: int | None = None, **kwargs) -> paging.Page:
    """Run a webpanel.queries *_page() with this request's cursor; 400 on a cursor not ours."""
    try:
        return fetch(db.session, *args, **kwargs, **page_args(size))
    except paging.BadCursor:
        abort(400, description="bad page cursor: start again from the first page")


def search_page(fetch, *args, size: int | None = None, **kwargs):
    """fetch_page() for a searched list: (page, None), or (empty page, the search's error).

    A search term that cannot be a hostname is shown beside the field, not a 500.
    """
    try:
        return fetch_page(fetch, *args, size=size, **kwargs), None
    except HostnameError as exc:
        return paging.Page([]), str(exc)


def page_url(**changes) -> str:
    """This list with the same query args, the cursor replaced by `changes`.

    The query is encoded here, never passed to url_for as keywords: an arg named like
    url_for's own (`_anchor`, `_external`, `endpoint`...) or a path argument (`hostname`)
    was a 500 or rewrote the page's links.
    """
    args = request.args.to_dict()
    args.pop("after", None)
    args.pop("before", None)
    args.update({k: v for k, v in changes.items() if v is not None})
    path = url_for(request.endpoint, **(request.view_args or {}))
    return f"{path}?{urlencode(args)}" if args else path
