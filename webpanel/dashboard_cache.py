"""The dashboard's figures, cached per panel process and refreshed in the background."""

from __future__ import annotations

import threading
import time

from flask import current_app

from webpanel.extensions import db
from webpanel.queries import dashboard

EXTENSION = "hostcrawl.dashboard"  # the app.extensions key of the app's DashboardCache


class DashboardCache:
    """The dashboard figures, recomputed in the background at most every `ttl` seconds,
    and at once, before they are served, when the deny entries have changed.

    Only a worker's very first request waits for them; later ones get the last
    figures while a thread refreshes them (the strip says when they were taken). A change
    of entries, made here or by any other process, is seen by its generation
    (webpanel.queries.dashboard.entries_generation, read on every get): figures taken
    before it are never served, since they would count, and name, hosts the list hides.
    Nor are figures of another database, or of this one before its crawl was forgotten
    (the generation's identity): a new database's figures start from zero.
    """

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._value: dashboard.Dashboard | None = None
        self._generation = dashboard.Generation()
        self._taken = 0.0
        self._refreshing = False
        self._lock = threading.Lock()

    def get(self, engine) -> dashboard.Dashboard:
        if self.ttl <= 0:
            return self._compute(engine)[1]
        with engine.connect() as conn:
            generation = dashboard.entries_generation(conn)
        with self._lock:
            value, stale = self._value, time.monotonic() - self._taken > self.ttl
            current = value is not None and self._generation.covers(generation)
            start = current and stale and not self._refreshing
            if start:
                self._refreshing = True
        if not current:
            with self._lock:  # first figures, or new entries: one request computes, others wait
                if self._value is None or not self._generation.covers(generation):
                    self._store(*self._compute(engine))
                return self._value
        if start:
            threading.Thread(target=self._refresh, args=(engine,), daemon=True).start()
        return value

    def _compute(self, engine) -> tuple[dashboard.Generation, dashboard.Dashboard]:
        """The figures with the generation read before them: a change committed while
        they are computed makes them stale at the next get."""
        with engine.connect() as conn:
            generation = dashboard.entries_generation(conn)
            return generation, dashboard.dashboard(conn)

    def _store(self, generation: dashboard.Generation, value: dashboard.Dashboard) -> None:
        self._generation, self._value, self._taken = generation, value, time.monotonic()

    def _refresh(self, engine) -> None:
        try:
            generation, value = self._compute(engine)
            with self._lock:
                # Never older than a get's recompute, nor of a database no longer served.
                if generation.covers(self._generation):
                    self._store(generation, value)
        finally:
            self._refreshing = False


def cached_dashboard() -> dashboard.Dashboard:
    """This app's dashboard figures, from its cache."""
    return current_app.extensions[EXTENSION].get(db.engine)
