"""Fake DNS + HTTP(S) world on loopback, so tests never touch the real network.

Build a :class:`World`, then run it in a subprocess with :class:`FakeWeb`::

    w = World(seed=1)
    w.site("a.test", title="A", links=["http://b.test/"])
    with FakeWeb(w) as web:
        web.nameservers, web.url_template("http"), web.fetches(host="a.test")

Pytest fixtures live in :mod:`tests.fakeweb.fixtures`.
"""

from .handle import FakeWeb, FakeWebError
from .world import ADDRESSES, ALLOWED_NETWORKS, BEHAVIOURS, World, link_host, normalize_host

__all__ = [
    "ADDRESSES",
    "ALLOWED_NETWORKS",
    "BEHAVIOURS",
    "FakeWeb",
    "FakeWebError",
    "World",
    "link_host",
    "normalize_host",
]
