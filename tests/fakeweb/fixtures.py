"""Pytest fixtures for fakeweb.

Enable with ``pytest_plugins = ["tests.fakeweb.fixtures"]`` in the root
conftest.py (or a test module), then::

    def test_x(fakeweb_factory):
        web = fakeweb_factory(world)   # started; stopped after the test
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .handle import FakeWeb
from .world import World


@pytest.fixture
def fakeweb_factory(tmp_path: Path) -> Iterator[Callable[..., FakeWeb]]:
    """Start FakeWeb instances on demand; all are stopped at teardown.

    Call it as ``fakeweb_factory(world, **FakeWeb kwargs)``. Each instance's
    logs stay in the test's tmp_path for post-mortem reading.
    """
    started: list[FakeWeb] = []

    def start(world: World, **kwargs) -> FakeWeb:
        """Start one FakeWeb for world."""
        kwargs.setdefault("workdir", tmp_path / f"fakeweb-{len(started)}")
        web = FakeWeb(world, **kwargs)
        started.append(web)
        return web.start()

    yield start
    for web in reversed(started):
        web.stop()
