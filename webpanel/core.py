"""What the views share: the database, the dashboard cache, list arguments."""

from __future__ import annotations

import threading
import time
from urllib.parse import urlencode

from flask import abort, current_app, request, url_for
from flask_login import current_user
from sqlalchemy import Engine

from crawler.core.hostnames import HostnameError
from crawler.db.pages import dashboard as dashboard_page
from crawler.db.pages import paging
from webpanel.extensions import db


def engine() -> Engine:
    """The panel's engine: every write goes through crawler.db's modules with it."""
    return db.engine


def actor() -> str:
    """Who the change log names for this request."""
    return getattr(current_user, "username", None) or "panel"


class StatsCache:
    """The dashboard figures, recomputed in the background at most every `ttl` seconds,
    and at once, before they are served, when the deny entries have changed.

    Only a worker's very first request waits for them; later ones get the last
    figures while a thread refreshes them (the strip says when they were taken). A change
    of entries, made here or by any other process, is seen by its generation
    (crawler.db.pages.dashboard.entries_generation, read on every get): figures taken
    before it are never served, since they would count, and name, hosts the list hides.
    """

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._value: dashboard_page.Dashboard | None = None
        self._generation: tuple[int, int] = (0, 0)
        self._taken = 0.0
        self._refreshing = False
        self._lock = threading.Lock()

    def get(self, engine) -> dashboard_page.Dashboard:
        if self.ttl <= 0:
            return self._compute(engine)[1]
        with engine.connect() as conn:
            generation = dashboard_page.entries_generation(conn)
        with self._lock:
            value, stale = self._value, time.monotonic() - self._taken > self.ttl
            current = value is not None and self._generation >= generation
            start = current and stale and not self._refreshing
            if start:
                self._refreshing = True
        if not current:
            with self._lock:  # first figures, or new entries: one request computes, others wait
                if self._value is None or self._generation < generation:
                    self._store(*self._compute(engine))
                return self._value
        if start:
            threading.Thread(target=self._refresh, args=(engine,), daemon=True).start()
        return value

    def _compute(self, engine) -> tuple[tuple[int, int], dashboard_page.Dashboard]:
        """The figures with the generation read before them: a change committed while
        they are computed makes them stale at the next get."""
        with engine.connect() as conn:
            generation = dashboard_page.entries_generation(conn)
            return generation, dashboard_page.dashboard(conn)

    def _store(self, generation: tuple[int, int], value: dashboard_page.Dashboard) -> None:
        self._generation, self._value, self._taken = generation, value, time.monotonic()

    def _refresh(self, engine) -> None:
        try:
            generation, value = self._compute(engine)
            with self._lock:
                if generation >= self._generation:  # never older than a get's recompute
                    self._store(generation, value)
        finally:
            self._refreshing = False


def stats() -> dashboard_page.Dashboard:
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
        "limit": max(1, min(size, paging.MAX_LIMIT)),
    }


def fetch_page(fetch, *args, size: int | None = None, **kwargs) -> paging.Page:
    """Run a reports.*_page() with this request's cursor; 400 on a cursor not ours."""
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
