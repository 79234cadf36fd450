"""The world check: proof only when a canary answers, said once each way."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from crawler.db.rules import trap_windows
from crawler.rules.world_check import NO_CANARY, SelfCheck, WorldCheck


class ScriptedWorld(WorldCheck):
    """A world check whose canaries say what `self.says` tells them (no network)."""

    def __init__(self, engine, canaries=(), says="OK") -> None:
        self.changes = []
        super().__init__(
            engine,
            resolver=lambda: None,
            templates=[],
            canary_hosts=canaries,
            keep_healthy=0,
            keep_unhealthy=0,
            interval=0,
            on_change=lambda *change: self.changes.append(change),
        )
        self.says = says

    async def ask(self, hostname: str, layer: str = "network") -> str:
        self.lookups += 1
        return self.says


def run(coroutine):
    """On a loop of its own thread: an earlier test may leave this thread's loop set."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def test_no_canary_is_no_proof_and_the_block_is_deferred(db):
    world = ScriptedWorld(db)  # nothing ever answered in this database: no canary

    assert run(world.answers()) == (None, NO_CANARY)
    assert run(SelfCheck(db, world).confirm("trap.test", "a trap")) is False
    assert trap_windows.deferrals(db) == [("trap.test", NO_CANARY)]
    assert world.changes[-1][1:] == (True, 0)  # never answered, nobody held back yet


def test_a_canary_answering_nxdomain_is_our_resolver_lying(db, caplog):
    world = ScriptedWorld(db, canaries=["hub.test"], says="DNS_NXDOMAIN")
    caplog.set_level(logging.WARNING, logger="crawler.rules.world_check")

    async def spell() -> list[str]:
        held = [await world.holds_back(f"n{i}.lied.test", edge=0) for i in range(3)]
        world.says = "OK"
        await asyncio.sleep(0.01)  # the edge of 0 s has passed
        return [*held, await world.holds_back("n9.lied.test", edge=0)]

    whys = run(spell())

    assert whys[:3] == ["resolver/network not answering (canaries: hub.test DNS_NXDOMAIN)"] * 3
    assert whys[3] == ""  # the world answers: the failure is the host's own
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2  # once when it stops, once when it comes back
    assert said[0].startswith("the world is not answering us") and "1 host held back" in said[0]
    assert said[1].startswith("the world answers again") and "3 hosts were held back" in said[1]
    assert world.changes[0][1:] == (False, 1) and world.changes[-1] == (None, False, 3)


def test_a_block_needs_a_canary_answering_at_its_moment(db):
    world = ScriptedWorld(db, canaries=["hub.test"])
    world._last["network"] = (time.monotonic(), True, "")  # a verdict from before says yes...
    world.says = "DNS_TIMEOUT"  # ...but the canary does not answer now

    assert run(SelfCheck(db, world).confirm("trap.test", "a trap")) is False
    assert trap_windows.deferrals(db)[0][1].startswith("resolver/network not answering")
