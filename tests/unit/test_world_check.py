"""The world check: proof only when a canary answers, said once each way."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from crawler.db.rules import trap_windows
from crawler.rules.self_check import SelfCheck
from crawler.rules.world_check import NO_CANARY, WorldCheck


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
    assert world.changes == []  # a block with no proof waits; it is no outage of ours


def test_a_canary_answering_nxdomain_is_our_resolver_lying(db, caplog):
    world = ScriptedWorld(db, canaries=["hub.test"], says="DNS_NXDOMAIN")
    caplog.set_level(logging.WARNING, logger="crawler.rules.world_check")

    async def spell() -> list[str]:
        held = [await world.holds_back(f"n{i}.lied.test") for i in range(3)]
        world.says = "OK"
        await world.recheck(set())  # the outage's watch asks again: it has ended
        return [*held, await world.holds_back("n9.lied.test")]

    whys = run(spell())

    assert whys[:3] == ["resolver/network not answering (canaries: hub.test DNS_NXDOMAIN)"] * 3
    assert whys[3] == ""  # the world answers: the failure is the host's own
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2  # once when it stops, once when it comes back
    assert said[0].startswith("the world is not answering us") and "1 host held back" in said[0]
    assert said[1].startswith("the world answers again") and "3 hosts were held back" in said[1]
    assert world.changes[0][1:] == (False, 1) and world.changes[-1] == (None, False, 3)


def test_a_request_that_began_in_an_outage_that_has_ended_is_asked_again_once(db):
    world = ScriptedWorld(db, canaries=["hub.test"], says="TCP_RESET")

    async def spell() -> list[str]:
        started = time.monotonic()
        held = await world.holds_back("n1.down.test")
        world.says = "OK"
        await world.recheck(set())
        return [
            held,
            await world.holds_back("n2.down.test", started=started),  # in flight through it
            await world.holds_back("n3.down.test", started=time.monotonic()),  # sent after
        ]

    held, in_flight, after = run(spell())
    assert held.startswith("resolver/network not answering")
    assert in_flight == "its request began while the world did not answer us"
    assert after == ""


def test_a_block_needs_a_canary_answering_at_its_moment(db):
    world = ScriptedWorld(db, canaries=["hub.test"])
    world._last["network"] = (time.monotonic(), True, "")  # a verdict from before says yes...
    world.says = "DNS_TIMEOUT"  # ...but the canary does not answer now

    assert run(SelfCheck(db, world).confirm("trap.test", "a trap")) is False
    assert trap_windows.deferrals(db)[0][1].startswith("resolver/network not answering")


def test_in_a_fresh_database_one_failure_is_no_outage(db):
    world = ScriptedWorld(db)  # no canary: nothing has answered in this database
    world.recent = 0.05

    async def alone() -> str:
        return await world.holds_back("redir.ssrf.test", outcome="TCP_RESET")

    assert run(alone()) == ""
    assert world.unproven_since is None and world.changes == [] and world.lookups == 0


def test_in_a_fresh_database_several_roots_failing_with_nothing_answering_are_ours(db):
    world = ScriptedWorld(db)
    world.recent = 0.2  # each waits this long for an answer: none comes

    async def together() -> list[str]:
        names = [f"n{i}.r{i}.test" for i in range(3)]
        return await asyncio.gather(*(world.holds_back(n, outcome="DNS_TIMEOUT") for n in names))

    whys = run(together())
    assert all(why.startswith("no host has answered yet in this database") for why in whys)
    assert world.unproven_since is not None and world.changes[0][1] is True  # never answered
    assert world.lookups == 0


def test_in_a_fresh_database_an_answer_during_the_wait_makes_it_the_hosts_own(db):
    world = ScriptedWorld(db)
    world.recent = 30.0  # a bound: the answer ends the wait

    async def answered() -> str:
        waiting = asyncio.ensure_future(world.holds_back("n1.dead.test", outcome="TCP_REFUSED"))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        world.heard("www.alive.test")
        return await asyncio.wait_for(waiting, 30)

    assert run(answered()) == ""
    assert world.unproven_since is None


def test_hosts_that_answered_a_moment_ago_are_not_asked_again(db):
    world = ScriptedWorld(db, canaries=["hub.test"], says="TCP_RESET")
    world.recent = 60.0
    world.heard("hub.test")  # the ordinary hosts answered a moment ago

    assert run(world.holds_back("odd.hostile.test", outcome="TCP_RESET")) == ""
    assert world.lookups == 0 and world.unproven_since is None


class LayeredWorld(ScriptedWorld):
    """A world check whose canaries answer per layer: `says[layer]`."""

    def __init__(self, engine, says: dict[str, str]) -> None:
        super().__init__(engine, canaries=["hub.test"])
        self.says = says

    async def ask(self, hostname: str, layer: str = "network") -> str:
        self.lookups += 1
        return self.says[layer]


def test_a_page_heard_in_a_network_outage_ends_it_only_when_a_canary_connects(db):
    world = LayeredWorld(db, {"dns": "OK", "network": "TCP_RESET"})

    async def spell() -> list[bool]:
        await world.holds_back("n1.down.test", layer="network", outcome="TCP_RESET")
        # A page answered over a connection made before the outage: no proof by itself.
        world.heard("kept.alive.test")
        await world.recheck(set())
        going_on = world.unproven_since is not None
        world.says["network"] = "OK"
        await world.recheck(set())
        return [going_on, world.unproven_since is None]

    assert run(spell()) == [True, True]


def test_an_outage_whose_network_failed_is_not_ended_by_names_resolving(db):
    world = LayeredWorld(db, {"dns": "DNS_TIMEOUT", "network": "DNS_TIMEOUT"})

    async def spell() -> list[bool]:
        await world.holds_back("n1.a.test", layer="dns", outcome="DNS_TIMEOUT")  # at DNS first
        world.says = {"dns": "OK", "network": "TCP_RESET"}
        world._last["network"] = (time.monotonic(), False, "no connection")  # a kept verdict
        world.keep[False] = 60.0
        await world.holds_back("n2.b.test", layer="network", outcome="TCP_RESET")
        world._last.pop("dns")
        assert await world.answers(layer="dns") == (True, "")  # a check at DNS: names resolve
        await world.recheck(set())  # the watch asks at the layer that failed: the network
        going_on = world.unproven_since is not None
        world.says["network"] = "OK"
        await world.recheck(set())
        return [going_on, world.unproven_since is None]

    assert run(spell()) == [True, True]


def test_an_outages_first_failure_waits_for_the_failures_that_follow(db):
    world = ScriptedWorld(db, canaries=["hub.test"], says="TCP_RESET")
    world.recent = 30.0  # a bound: the second failure ends the wait

    def reset_now(hostname: str):
        """A TCP_RESET of `hostname`'s fetch begun now."""
        return world.holds_back(hostname, began=time.monotonic(), outcome="TCP_RESET")

    async def onset() -> list[str]:
        fetch_began = time.monotonic()
        world.heard("ok.alive.test")  # a page answered a moment ago, nothing failed since
        first = asyncio.ensure_future(reset_now("n1.a.test"))
        await asyncio.sleep(0.01)
        world.heard("old.conn.test", began=fetch_began)  # its fetch began before: no news
        await asyncio.sleep(0.01)
        assert not first.done()  # waiting for what follows (bounded by world.recent)
        second = await reset_now("n2.b.test")
        return [await asyncio.wait_for(first, 30), second]

    whys = run(onset())
    assert all(why.startswith("resolver/network not answering") for why in whys), whys
