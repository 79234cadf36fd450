"""What the views share: the one Database (all writes), the dashboard cache, list arguments."""

from __future__ import annotations

import threading
import time

from flask import abort, current_app, request, url_for
from flask_login import current_user

from crawler.db import reports
from crawler.db.database import Database
from crawler.hostnames import HostnameError
from webpanel.extensions import db

_lock = threading.Lock()


def database() -> Database:
    """This process's Database: every change to deny entries goes through it."""
    ext = current_app.extensions
    if "hostcrawl.database" not in ext:
        with _lock:
            if "hostcrawl.database" not in ext:
                ext["hostcrawl.database"] = Database(db.engine, actor="panel")
    return ext["hostcrawl.database"]


def actor() -> str:
    """Who the audit log names for this request."""
    return getattr(current_user, "username", None) or "panel"


class StatsCache:
    """The dashboard figures, recomputed in the background at most every `ttl` seconds.

    Only a worker's very first request waits for them; later ones get the last
    figures while a thread refreshes them (the strip says when they were taken).
    """

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._value: reports.Dashboard | None = None
        self._taken = 0.0
        self._refreshing = False
        self._lock = threading.Lock()

    def get(self, engine) -> reports.Dashboard:
        if self.ttl <= 0:
            return self._compute(engine)
        with self._lock:
            value, stale = self._value, time.monotonic() - self._taken > self.ttl
            start = value is not None and stale and not self._refreshing
            if start:
                self._refreshing = True
        if value is None:
            with self._lock:  # the first figures: one request computes, the others wait
                if self._value is None:
                    self._store(self._compute(engine))
                return self._value
        if start:
            threading.Thread(target=self._refresh, args=(engine,), daemon=True).start()
        return value

    def _compute(self, engine) -> reports.Dashboard:
        with engine.connect() as conn:
            return reports.dashboard(conn)

    def _store(self, value: reports.Dashboard) -> None:
        self._value, self._taken = value, time.monotonic()

    def _refresh(self, engine) -> None:
        try:
            value = self._compute(engine)
            with self._lock:
                self._store(value)
        finally:
            self._refreshing = False


def stats() -> reports.Dashboard:
    cache = current_app.extensions["hostcrawl.stats"]
    return cache.get(db.engine)


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
        "limit": max(1, min(size, reports.MAX_LIMIT)),
    }


def fetch_page(fetch, *args, size: int | None = None, **kwargs) -> reports.Page:
    """Run a reports.*_page() with this request's cursor; 400 on a cursor not ours."""
    try:
        return fetch(db.session, *args, **kwargs, **page_args(size))
    except reports.BadCursor:
        abort(400, description="bad page cursor: start again from the first page")


def search_page(fetch, *args, size: int | None = None, **kwargs):
    """fetch_page() for a searched list: (page, None), or (empty page, the search's error).

    A search term that cannot be a hostname is shown beside the field, not a 500.
    """
    try:
        return fetch_page(fetch, *args, size=size, **kwargs), None
    except HostnameError as exc:
        return reports.Page([]), str(exc)


def page_url(**changes) -> str:
    """This list with the same query args, the cursor replaced by `changes`."""
    args = request.args.to_dict()
    args.pop("after", None)
    args.pop("before", None)
    args.update({k: v for k, v in changes.items() if v is not None})
    return url_for(request.endpoint, **(request.view_args or {}), **args)
