"""The world check hears the crawl first, asks canaries last, and asks each canary at
most once an interval, with our User-Agent: a trap filling its window while a
crawl runs costs no host a second request."""

from __future__ import annotations

import asyncio
import time

import pytest

from crawler.core.outages import crawl_says_it_answers
from crawler.network.probes import handshake
from crawler.rules.evidence import DNS, NETWORK, Evidence, failure_layer
from crawler.rules.world_check import WorldCheck
from tests.loops import run


class CountingWorld(WorldCheck):
    """A world check whose canaries answer OK and are counted per host (no network)."""

    def __init__(self, canaries=("a.test", "b.test", "c.test"), interval=60.0) -> None:
        super().__init__(None, lambda: None, [], canary_hosts=canaries, interval=interval)
        self.asked: list[tuple[str, str]] = []

    async def ask(self, hostname: str, layer: str = NETWORK) -> str:
        self.lookups += 1
        self.evidence.contacted(hostname, layer)
        self.asked.append((hostname, layer))
        return "OK"


@pytest.mark.parametrize(
    ("outcome", "layer"),
    [
        ("DNS_NXDOMAIN", DNS),
        ("DNS_TIMEOUT", DNS),
        ("TCP_REFUSED", NETWORK),
        ("TLS_HANDSHAKE", NETWORK),
        ("HTTP_TIMEOUT", NETWORK),
    ],
)
def test_a_failure_is_judged_at_its_layer(outcome, layer):
    assert failure_layer(outcome) == layer


def test_another_root_answering_after_a_failure_began_proves_the_world_without_a_probe():
    world = CountingWorld()

    async def crawl() -> str:
        began = time.monotonic()
        world.heard("www.other.test")  # a page of another root answered since
        return await world.holds_back("n1.trap.test", began=began)

    assert run(crawl()) == ""
    assert world.asked == []


def test_an_answer_from_before_the_failure_began_is_no_proof():
    evidence = Evidence()
    evidence.heard("www.other.test", NETWORK)
    heard_at = evidence.last_contact("www.other.test", NETWORK)
    heard = evidence.heard_at(NETWORK, "n1.trap.test")
    assert not crawl_says_it_answers(heard, heard_at + 1, heard_at + 1, recent=0)
    assert crawl_says_it_answers(heard, heard_at, heard_at, recent=0)


def test_an_answer_of_the_same_root_is_no_proof_for_that_root():
    evidence = Evidence()
    evidence.heard("a.trap.test", NETWORK)
    assert evidence.heard_at(NETWORK, "trap.test").last_answer == float("-inf")
    assert evidence.heard_at(NETWORK, "else.test").last_answer > float("-inf")


def test_a_resolved_name_proves_the_resolver_not_the_network():
    evidence = Evidence()
    evidence.heard("www.other.test", DNS)
    assert evidence.heard_at(DNS, "").last_answer > float("-inf")
    assert evidence.heard_at(NETWORK, "").last_answer == float("-inf")


def test_twenty_failures_in_a_row_ask_each_canary_once():
    """The bug: a check per failure, each asking the canaries again (20 HEADs in 2 s)."""
    world = CountingWorld(interval=60.0)

    async def failures() -> list[str]:
        whys = []
        for i in range(20):
            began = time.monotonic()  # each began after the last verdict
            failure = world.holds_back(f"n{i}.trap.test", began, NETWORK)
            waiting = asyncio.ensure_future(failure)
            for _ in range(3):
                await asyncio.sleep(0)
            world.heard(f"www.r{i}.test")  # the crawl goes on answering
            whys.append(await asyncio.wait_for(waiting, 10))
        return whys

    assert run(failures()) == [""] * 20
    assert sorted(world.asked) == [(h, NETWORK) for h in ("a.test", "b.test", "c.test")]


def test_failures_waiting_together_share_one_check():
    world = CountingWorld()

    async def together() -> list[str]:
        began = time.monotonic()
        waits = [world.holds_back(f"n{i}.trap.test", began, DNS) for i in range(30)]
        return await asyncio.gather(*waits)

    assert run(together()) == [""] * 30
    assert len(world.asked) == 3 and {layer for _, layer in world.asked} == {DNS}


def test_a_canary_contacted_within_the_interval_waits_for_news_instead():
    """Every canary was just fetched by the crawl: the failure waits for the crawl's
    next answer rather than ask one of them again."""
    world = CountingWorld(interval=60.0)
    for canary in ("a.test", "b.test", "c.test"):
        world.evidence.contacted(canary, NETWORK)

    async def wait_for_news() -> str:
        pending = asyncio.ensure_future(world.holds_back("n1.trap.test"))
        await asyncio.sleep(0)
        assert not pending.done()
        world.heard("www.late.test")
        return await asyncio.wait_for(pending, 10)

    assert run(wait_for_news()) == ""
    assert world.asked == []


def test_the_status_line_probe_says_who_knocks():
    async def probe() -> bytes:
        heard = asyncio.get_running_loop().create_future()

        async def server(reader, writer):
            heard.set_result(await reader.readuntil(b"\r\n\r\n"))
            writer.write(b"HTTP/1.0 200 OK\r\n\r\n")
            await writer.drain()
            writer.close()

        listening = await asyncio.start_server(server, "127.0.0.1", 0)
        port = listening.sockets[0].getsockname()[1]
        async with listening:
            said = await handshake(
                "127.0.0.1", port, "a.test", 5, tls=False, http=True, user_agent="hostcrawl/9"
            )
            assert said == "OK"
            return await asyncio.wait_for(heard, 5)

    request = run(probe())
    assert b"\r\nUser-Agent: hostcrawl/9\r\n" in request and request.startswith(b"HEAD / ")
