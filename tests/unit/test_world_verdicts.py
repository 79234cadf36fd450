"""WorldCheck: whose failure was it? A verdict from before a failure's wait began is no answer."""

from __future__ import annotations

import time

from crawler.rules.world_check import WorldCheck
from tests.loops import run as run_in_loop


def world_saying(*outcomes: str) -> WorldCheck:
    world = WorldCheck(
        None, lambda: None, ["http://{hostname}/"], canary_hosts=["c.test"], interval=0
    )
    said = iter(outcomes)

    async def ask(hostname: str, layer: str = "network") -> str:
        world.lookups += 1
        return next(said)

    world.ask = ask
    return world


def test_a_fresh_healthy_verdict_is_kept_for_a_failure_that_began_after_it():
    world = world_saying("OK", "DNS_TIMEOUT")

    async def run():
        assert await world.answers() == (True, "")
        return await world.answers(newer_than=time.monotonic() - 60)

    assert run_in_loop(run()) == (True, "")
    assert world.lookups == 1


def test_a_failure_that_began_after_the_verdict_asks_the_world_again():
    """The world answered; then our resolver went silent and a lookup waited out its
    timeout: the old verdict cannot clear it."""
    world = world_saying("OK", "DNS_TIMEOUT")

    async def run():
        assert await world.answers() == (True, "")
        return await world.answers(newer_than=time.monotonic() + 1)

    answering, why = run_in_loop(run())
    assert answering is False and "c.test DNS_TIMEOUT" in why
    assert world.lookups == 2
