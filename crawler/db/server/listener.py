"""Keep a worker's deny list current: LISTEN for changes, reload on a timer.

Changes made anywhere (another worker's block, an operator's no_follow) are
sent with pg_notify in the transaction that makes them, so they reach every
running worker within moments of the commit. A full reload on reconnect and
every `reload_every` seconds covers anything a dropped connection missed.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable

import psycopg
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from crawler.core import config
from crawler.core.words import counted
from crawler.db.operators.bulk_change_log import DENYLIST_CHANNEL
from crawler.db.server.engine import CONNECT_ARGS, checked_database_url

log = logging.getLogger(__name__)

MAX_BACKOFF = 30.0


def conninfo(engine: Engine) -> str:
    """The engine's URL as plain libpq conninfo for a psycopg connection; DATABASE_LISTEN_URL
    if set (LISTEN needs a session of its own: not through a transaction pooler)."""
    direct = config.from_environment("DATABASE_LISTEN_URL", os.environ)
    url = make_url(checked_database_url(direct)) if direct else engine.url
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class EntryListener:
    """A daemon thread passing deny-entry changes to `on_change(hostname, rule or None)`.

    `reload()` is called after each (re)connect and every `reload_every` seconds:
    the holder of a copy of the entries reads them all again.
    """

    def __init__(
        self,
        engine: Engine,
        on_change: Callable[[str, str | None], None],
        reload: Callable[[], None],
        reload_every: float = 60.0,
    ) -> None:
        self.engine = engine
        self.on_change = on_change
        self.reload = reload
        self.reload_every = reload_every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="denylist-listener", daemon=True)
        self.ready = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            try:
                self._listen()
                backoff = 1.0
            except (psycopg.Error, DBAPIError, OSError) as exc:
                log.warning(
                    "deny-list listener lost the database (%s); retrying in %.0fs", exc, backoff
                )
                self._stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)

    def _listen(self) -> None:
        with psycopg.connect(conninfo(self.engine), autocommit=True, **CONNECT_ARGS) as conn:
            conn.execute(f"LISTEN {DENYLIST_CHANNEL}")
            self.reload()  # after LISTEN, so nothing falls between
            self.ready.set()
            log.info("deny list: listening for changes")
            reloaded = time.monotonic()
            while not self._stop.is_set():
                for note in conn.notifies(timeout=1.0, stop_after=100):
                    self._apply(note.payload)
                if time.monotonic() - reloaded > self.reload_every:
                    self.reload()
                    reloaded = time.monotonic()

    def _apply(self, payload: str) -> None:
        change = json.loads(payload)
        if change["change"] == "reload":  # a bulk change (crawler.db.operators.bulk): read them all
            self.reload()
            log.info(
                "deny list: reloaded after a bulk change of %s",
                counted(change["count"], "entry", "entries"),
            )
            return
        rule = change["rule"] if change["change"] == "add" else None
        self.on_change(change["hostname"], rule)
        log.info("deny list: %s %s (%s)", change["change"], change["hostname"], change["rule"])
