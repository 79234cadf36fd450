"""Names this process has written and seen committed: the crawl's finish leaves them out
of its write (issue 50, item 5: skip known names before the database).

Most names a page reveals are known already, and each known name still costs the write
two index probes (hosts, queue) that grow with the database: bench/knownnames.py
measured a filter that knew every name saving 44% of `finish_many` at 10M hosts and
bringing its growth from 1M from x1.68 to x1.27. This is the filter that can be built
without losing a host: exact. A name is here only once a transaction that wrote it (as new
or as known) committed, so a name it skips is in the database; it never skips a name it
has not seen (a Bloom filter would, now and then, and that host would be lost). A bounded
LRU keeps the names pages name most often: the popular hosts most links point to.

A name leaves the database, or its row loses its date, only through a deny entry's
change (crawler.db.rules.deny_entries: an entry's own row goes with the entry; a row an
entry held is dated again when a link finds it): the worker forgets every known name
when its deny list hears of a change (crawler.rules.live_deny_list).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from weakref import WeakKeyDictionary

from sqlalchemy import Engine

from crawler.core import config

DEFAULT_SIZE = config.setting("KNOWN_NAMES").default


class KnownNames:
    """An LRU of names known to be in the database, safe across the finish's threads."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self.skipped = 0
        self._names: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def unknown(self, names: Sequence) -> list:
        """`names` (FoundName) less those known; each known one is counted and kept fresh."""
        if not self.size:
            return list(names)
        with self._lock:
            left = []
            for name in names:
                if name.hostname in self._names:
                    self._names.move_to_end(name.hostname)
                    self.skipped += 1
                else:
                    left.append(name)
            return left

    def remember(self, hostnames: Iterable[str]) -> None:
        """Names a committed transaction wrote or found known."""
        if not self.size:
            return
        with self._lock:
            for hostname in hostnames:
                self._names[hostname] = None
                self._names.move_to_end(hostname)
            while len(self._names) > self.size:
                self._names.popitem(last=False)

    def forget(self) -> None:
        with self._lock:
            self._names.clear()

    def __len__(self) -> int:
        return len(self._names)


_KNOWN: WeakKeyDictionary[Engine, KnownNames] = WeakKeyDictionary()


def known_names(engine: Engine) -> KnownNames:
    """The names known in `engine`'s database, for this process."""
    if engine not in _KNOWN:
        _KNOWN[engine] = KnownNames()
    return _KNOWN[engine]


def set_size(engine: Engine, size: int) -> KnownNames:
    """The known names of `engine` kept up to `size` (0: none, the filter off)."""
    known = known_names(engine)
    known.size = size
    known.remember(())  # trims
    return known


def forget_all() -> None:
    """Every engine's known names: a deny entry changed (see the module's docstring)."""
    for known in list(_KNOWN.values()):
        known.forget()
