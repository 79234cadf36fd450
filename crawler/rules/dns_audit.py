"""The DNS/TLS audit (docs/design.md, rule 7): judge due hosts without downloading a page.

Hosts are claimed like the crawler claims them (same leases), resolved through
the crawler's resolver with high concurrency, optionally given a TLS
handshake, and their outcomes written in batches: dead hosts back off,
live ones stay due for the crawl, and every subdomain's outcome goes into its
root's trap window — so a subdomain generator is blocked here, by the same
rule, before a single page is fetched.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta

from scrapy.utils.defer import deferred_to_future
from sqlalchemy import Engine

from crawler.core import config
from crawler.core.hostnames import is_subdomain, root
from crawler.core.outcomes import (
    DNS_ALIVE,
    is_network_failure,
)
from crawler.core.words import counted
from crawler.db.crawl import claims, queue
from crawler.db.rules import dns_audits, trap_windows
from crawler.db.rules.dns_audits import Backoff
from crawler.network.probes import handshake
from crawler.rules.trap_guard import Confirm, TrapGuard

ALL_DUE = 10**9


@dataclass
class AuditOptions:
    concurrency: int = config.setting("AUDIT_CONCURRENCY").default
    tls: bool = False
    tls_port: int = config.setting("AUDIT_TLS_PORT").default
    tls_timeout: float = config.setting("AUDIT_TLS_TIMEOUT").default
    limit: int | None = None
    root: str | None = None
    dry_run: bool = False
    batch: int = 500
    lease: timedelta = timedelta(minutes=10)
    backoff: Backoff = field(default_factory=Backoff)
    window: int = config.setting("TRAP_WINDOW").default
    progress_every: float = config.setting("AUDIT_PROGRESS_EVERY").default


@dataclass
class Progress:
    """Counts a person can watch: done / total, rate, ETA, outcomes so far."""

    total: int = 0
    done: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    blocked: dict[str, str] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def add(self, outcome: str) -> None:
        self.done += 1
        self.outcomes[outcome] += 1

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        left = max(self.total - self.done, 0)
        eta = f"{left / rate:.0f}s" if rate > 0 else "?"
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        kinds = ", ".join(f"{k} {n}" for k, n in self.outcomes.most_common())
        return f"audit: {self.done}/{self.total}{share}, {rate:.0f} hosts/s, ETA {eta}" + (
            f" — {kinds}" if kinds else ""
        )

    def summary(self) -> str:
        elapsed = time.monotonic() - self.started
        lines = [
            f"audited {counted(self.done, 'host')} in {elapsed:.1f}s",
            "outcome          hosts",
        ]
        lines += [f"{kind:<16} {n:>5}" for kind, n in self.outcomes.most_common()]
        lines += [f"blocked {r}: {reason}" for r, reason in self.blocked.items()]
        return "\n".join(lines)


class Audit:
    """One audit run over the due hosts (or those under one root)."""

    def __init__(
        self,
        engine: Engine,
        resolver,
        options: AuditOptions,
        say: Callable[[str], None] = print,
        actor: str = "audit",
        confirm: Confirm | None = None,
    ) -> None:
        self.engine = engine
        self.traps = TrapGuard(engine, options.window, actor, confirm=confirm)
        self.resolver = resolver
        self.options = options
        self.say = say
        self.worker = f"audit:{secrets.token_hex(4)}"
        self.progress = Progress()
        self._seen: set[str] = set()
        self._unclaimed: Iterator[str] | None = None
        self._pending: list[tuple[str, str]] = []
        self._probed: set[str] = set()

    async def run(self) -> Progress:
        """Audit until `limit` hosts or everything due at the start is done."""
        due = await asyncio.to_thread(self._count_due)
        self.progress.total = min(due, self.options.limit or due)
        names: asyncio.Queue[str | None] = asyncio.Queue(maxsize=2 * self.options.concurrency)
        workers = [asyncio.create_task(self._work(names)) for _ in range(self.options.concurrency)]
        reporter = asyncio.create_task(self._report())
        try:
            await self._feed(names)
            await asyncio.gather(*workers)
        finally:
            reporter.cancel()
            await self._flush()
        if not self.options.dry_run:
            # A block held back for want of proof (no name had resolved yet) gets its look.
            self.progress.blocked.update(await self.traps.recheck_deferred())
        self.say(self.progress.line())
        return self.progress

    def _count_due(self) -> int:
        return claims.count_due(self.engine, self.options.limit or ALL_DUE, self.options.root)

    async def _feed(self, names: asyncio.Queue) -> None:
        """Claim batches (or, in a dry run, read them) and hand them to the workers."""
        claimed = 0
        while claimed < self.progress.total:
            n = min(self.options.batch, self.progress.total - claimed)
            batch = await asyncio.to_thread(self._next_batch, n)
            if not batch:
                break
            claimed += len(batch)
            for name in batch:
                await names.put(name)
        for _ in range(self.options.concurrency):
            await names.put(None)

    def _next_batch(self, n: int) -> list[str]:
        if self.options.dry_run:  # read, never claim: a dry run writes nothing
            if self._unclaimed is None:
                due = claims.due_hosts(self.engine, self.progress.total, self.options.root)
                self._unclaimed = iter(due)
            return [name for _, name in zip(range(n), self._unclaimed, strict=False)]
        batch = claims.claim(self.engine, n, self.worker, self.options.lease, self.options.root)
        again = [h for h in batch if h in self._seen]  # live hosts are due again at once
        if again:
            queue.release(self.engine, again)
        batch = [h for h in batch if h not in self._seen]
        self._seen.update(batch)
        return batch

    async def _work(self, names: asyncio.Queue) -> None:
        while (name := await names.get()) is not None:
            outcome = await self.check(name)
            self.progress.add(outcome)
            self._pending.append((name, outcome))
            if len(self._pending) >= self.options.batch:
                await self._flush()

    async def check(self, hostname: str) -> str:
        """The host's DNS (and, optionally, TLS) outcome."""
        # Judged as the crawl judges it: an address that is not public is ADDRESS_REFUSED.
        resolution = self.resolver.public(await deferred_to_future(self.resolver.resolve(hostname)))
        outcome = resolution.outcome
        if outcome == DNS_ALIVE and self.options.tls:
            o = self.options
            outcome = await handshake(resolution.address, o.tls_port, hostname, o.tls_timeout)
        if is_network_failure(outcome) and is_subdomain(hostname):
            await self._probe_wildcard(root(hostname))
        return outcome

    async def _probe_wildcard(self, domain: str) -> None:
        """Once per root with failures: does a random name under it resolve?"""
        if domain in self._probed:
            return
        self._probed.add(domain)
        if await asyncio.to_thread(trap_windows.wildcard_probe, self.engine, domain):
            return
        probe = f"hc-{secrets.token_hex(6)}.{domain}"
        resolution = await deferred_to_future(self.resolver.resolve(probe))
        if not self.options.dry_run:
            save = trap_windows.save_wildcard_probe
            await asyncio.to_thread(save, self.engine, domain, probe, resolution.outcome)

    async def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if batch and not self.options.dry_run:
            await asyncio.to_thread(
                dns_audits.record_audits, self.engine, batch, self.options.backoff
            )
            self.progress.blocked.update(await self.traps.observe_many(batch))

    async def _report(self) -> None:
        while True:
            await asyncio.sleep(self.options.progress_every)
            with contextlib.suppress(Exception):
                self.say(self.progress.line())
