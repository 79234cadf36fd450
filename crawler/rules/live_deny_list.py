"""A worker's copy of the deny entries, kept current while it crawls (docs/design.md, rule 3).

Loaded once before the first claim, then kept in step by LISTEN/NOTIFY (and
a periodic full reload). A block made by this worker is added at once, so it
filters the very next link and request.
"""

from __future__ import annotations

import threading

from sqlalchemy import Engine

from crawler.core.denylist import Denial, DenyList
from crawler.db.crawl import known_names
from crawler.db.rules import deny_entries
from crawler.db.server.listener import EntryListener


class LiveDenyList:
    """The deny list of one worker: a DenyList, its loader and its listener."""

    def __init__(self, engine: Engine, reload_every: float = 60.0) -> None:
        self.engine = engine
        self._list: DenyList | None = None
        self._lock = threading.Lock()
        self.listener = EntryListener(engine, self.remember, self.reload, reload_every)

    @property
    def loaded(self) -> DenyList:
        """The list; loading it here on first use (callers off the event loop load it first)."""
        return self._list if self._list is not None else self.load()

    def size(self) -> int:
        """Entries in the list now: 0 before it is loaded (never loads it)."""
        return len(self._list) if self._list is not None else 0

    def denial(self, hostname: str) -> Denial | None:
        return self.loaded.denial(hostname)

    def load(self) -> DenyList:
        """Read every entry if not loaded yet, and start listening for changes."""
        with self._lock:
            if self._list is None:
                self._list = DenyList(deny_entries.deny_entries(self.engine))
                self.listener.start()
            return self._list

    def reload(self) -> None:
        """Read every entry again, in place, so holders of the list see the new ones."""
        fresh = deny_entries.deny_entries(self.engine)
        with self._lock:
            if self._list is None:
                self._list = DenyList(fresh)
                return
            if self._list.entries().keys() - {hostname for hostname, _ in fresh}:
                known_names.forget_all()  # a removal this worker did not hear of
            self._list.replace(fresh)

    def remember(self, hostname: str, rule: str | None) -> None:
        """Apply one committed change (rule None: removed), made here or announced.

        The lock makes a load in progress finish first, so the change is never lost.
        """
        with self._lock:
            if self._list is None:
                return
            if rule is None:
                self._list.remove(hostname)
                # The entry's own row may be gone, the rows it held undated: the known
                # names may hold them (crawler.db.crawl.known_names).
                known_names.forget_all()
            else:
                self._list.add(hostname, rule)

    def stop(self) -> None:
        if self._list is not None:
            self.listener.stop()
