"""Lookups/s of `scrapy audit` against fakeweb's DNS, beside a plain dnspython loop.

Targets:
  * the audit resolves (and writes) >= 2,000 hosts/s;
  * >= 0.8 of a plain dnspython asyncio loop with the same concurrency.

The audit runs as it does in production: a `scrapy audit` process on one core
claiming due hosts from a throwaway embedded Postgres, resolving them through
crawler.network.resolver.OutcomeResolver and writing every outcome in batches. The
baseline resolves the same number of (fresh) names with dns.asyncresolver,
same nameserver, same concurrency, and writes nothing. Rounds alternate
(audit, plain, audit, plain) with fresh names each round, so no cache helps;
the best round of each counts.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time

import dns.asyncresolver
from _common import machine_line, start_database, verdict
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.server.engine import PROJECT_ROOT, get_engine

sys.path.insert(0, str(PROJECT_ROOT))  # the local test internet lives in tests/
from tests.fakeweb import FakeWeb, World  # noqa: E402

NAMES = 20_000
CONCURRENCY = 200
ROUNDS = 2
TARGET_RATE = 2_000
TARGET_RATIO = 0.8


def names(round_no: int) -> list[str]:
    return [f"r{round_no}-h{i:05}.many.test" for i in range(NAMES)]


def audit_round(web: FakeWeb, engine, round_no: int) -> float:
    """Hosts/s of one `scrapy audit` over NAMES fresh due hosts (its own timing)."""
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE trap_window, wildcard_probes, hosts CASCADE"))
    queue.save_hosts(engine, names(round_no))
    command = [
        sys.executable, "-m", "scrapy", "audit", "-L", "WARNING",
        "-s", f"DNS_NAMESERVERS={web.nameservers}", "-s", f"AUDIT_CONCURRENCY={CONCURRENCY}",
        "-s", "AUDIT_PROGRESS_EVERY=60",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    found = re.search(r"audited ([\d,]+) hosts in ([\d.]+)s", done.stdout)  # "20,000"
    audited, seconds = int(found.group(1).replace(",", "")), float(found.group(2))
    assert audited == NAMES, done.stdout
    return audited / seconds


async def plain_loop(web: FakeWeb, hostnames: list[str]) -> float:
    """Hosts/s of a bare dnspython asyncio loop with the same concurrency."""
    resolver = dns.asyncresolver.Resolver(configure=False)
    host, port = web.nameservers.split(":")
    resolver.nameservers, resolver.port = [host], int(port)
    resolver.lifetime = 5
    pending = iter(hostnames)
    answered = 0

    async def worker() -> None:
        nonlocal answered
        for name in pending:
            try:
                await resolver.resolve(name, "A")
                answered += 1
            except dns.exception.DNSException:
                pass

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    assert answered == len(hostnames)
    return len(hostnames) / (time.perf_counter() - started)


def main() -> None:
    print(machine_line())
    start_database("hostcrawl-bench-audit-")
    engine = get_engine()
    world = World()
    world.zone("many.test", "a")
    rates: dict[str, list[float]] = {"audit": [], "plain": []}
    with FakeWeb(world) as web:
        for round_no in range(ROUNDS):
            rates["audit"].append(audit_round(web, engine, 2 * round_no))
            plain_names = names(2 * round_no + 1)
            rates["plain"].append(asyncio.run(plain_loop(web, plain_names)))
            print(
                f"# round {round_no + 1}: audit {rates['audit'][-1]:,.0f} hosts/s,"
                f" plain dnspython {rates['plain'][-1]:,.0f} lookups/s"
            )
    audit, plain = max(rates["audit"]), max(rates["plain"])
    ratio = audit / plain
    print(
        f"plain dnspython asyncio loop: {plain:,.0f} lookups/s (baseline, concurrency"
        f" {CONCURRENCY}, {NAMES:,} names)"
    )
    rate = f"{audit:,.0f} hosts/s"
    word = verdict(audit >= TARGET_RATE, "scrapy audit", rate, f">= {TARGET_RATE:,}/s")
    print(f"scrapy audit (resolve + write): {rate} (target >= {TARGET_RATE:,}) {word}")
    word = verdict(
        ratio >= TARGET_RATIO, "scrapy audit vs plain loop", f"x{ratio:.2f}", f">= x{TARGET_RATIO}"
    )
    print(f"scrapy audit vs plain loop: ratio {ratio:.2f} (target >= {TARGET_RATIO}) {word}")


if __name__ == "__main__":
    main()
