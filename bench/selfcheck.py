"""What the self-check before a block costs, against the block's own write.

Before a trap root is blocked, the worker asks its canaries (a fresh lookup, a
connection, an HTTP status line each) and re-checks the window's 3 newest
names. This measures, on fakeweb and a throwaway embedded Postgres, the
look-ups and milliseconds one self-check costs, beside the baseline measured
in the same process, rounds alternating: the block itself (upsert_blocked and
its unblock, the writes a block costs without a self-check).

Target: <= 10 look-ups per block; the time is reported, not judged (a block
happens once per trap root).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import sys
import time

from twisted.internet import asyncioreactor

asyncioreactor.install()

from _common import machine_line, start_database, verdict  # noqa: E402

from crawler.core.hostnames import allowed_private_networks  # noqa: E402
from crawler.db.rules import deny_entries, trap_windows  # noqa: E402
from crawler.db.server.engine import PROJECT_ROOT, get_engine  # noqa: E402
from crawler.network.resolver import OutcomeResolver, parse_nameservers  # noqa: E402
from crawler.rules.self_check import SelfCheck  # noqa: E402
from crawler.rules.world_check import WorldCheck  # noqa: E402

sys.path.insert(0, str(PROJECT_ROOT))  # the local test internet lives in tests/
from tests.fakeweb import FakeWeb, World  # noqa: E402

ROUNDS = 20
WINDOW = 50
TARGET_LOOKUPS = 10


def world() -> World:
    world = World()
    for name in ("a.test", "b.test", "c.test"):
        world.site(name)
    world.zone("trap.test", "nxdomain")
    return world


async def measure(engine, web: FakeWeb) -> dict[str, list[float]]:
    from twisted.internet import reactor

    servers = parse_nameservers(web.nameservers)
    # fakeweb's loopback web, let through as a crawl lets it (ALLOWED_PRIVATE_NETWORKS).
    allowed = allowed_private_networks()
    resolver = OutcomeResolver(reactor, servers, timeout=2, allowed=allowed)
    # keep_healthy=0: every self-check asks its canaries, as the first one after a while.
    world_check = WorldCheck(
        engine, lambda: resolver, [web.url_template()], ["a.test", "b.test", "c.test"],
        timeout=2, keep_healthy=0, interval=0,
    )  # fmt: skip
    check = SelfCheck(engine, world_check)
    outcomes = [(f"n{i:02}.trap.test", "DNS_NXDOMAIN") for i in range(WINDOW)]
    (reason,) = trap_windows.record_outcomes(engine, outcomes, WINDOW).values()
    times: dict[str, list[float]] = {"selfcheck": [], "block": [], "lookups": []}
    for _ in range(ROUNDS):
        before, started = world_check.lookups, time.perf_counter()
        assert await check.confirm("trap.test", reason)
        times["selfcheck"].append(1000 * (time.perf_counter() - started))
        times["lookups"].append(world_check.lookups - before)
        started = time.perf_counter()
        assert deny_entries.upsert_blocked(engine, "trap.test", reason, "bench")
        deny_entries.unblock(engine, ["trap.test"], "bench")
        times["block"].append(1000 * (time.perf_counter() - started))
    return times


def main() -> None:
    logging.getLogger("crawler.db.rules.deny_entries").setLevel(logging.ERROR)  # a block per round
    print(machine_line())
    start_database("hostcrawl-bench-selfcheck-")
    engine = get_engine()
    from twisted.internet import reactor

    result: dict = {}

    async def run() -> None:
        try:
            with FakeWeb(world()) as web:
                result["times"] = await measure(engine, web)
        finally:
            reactor.stop()

    reactor.callWhenRunning(lambda: asyncio.ensure_future(run()))
    reactor.run()
    times = result["times"]
    check, block = statistics.median(times["selfcheck"]), statistics.median(times["block"])
    lookups = max(times["lookups"])
    print(f"the block's own write (upsert_blocked + unblock): {block:.1f} ms (baseline)")
    word = verdict(
        lookups <= TARGET_LOOKUPS, "look-ups per block", f"{lookups:.0f}", f"<= {TARGET_LOOKUPS}"
    )
    print(
        f"self-check per block: {lookups:.0f} look-ups (target <= {TARGET_LOOKUPS})"
        f" {word}; {check:.1f} ms median of {ROUNDS}"
        f" (ratio vs the block's write: {check / block:.1f}x)"
    )


if __name__ == "__main__":
    main()
