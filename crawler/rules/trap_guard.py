"""Outcomes into trap windows, and blocks for the roots they prove traps (docs/design.md, rule 5).

The crawl and the audit both feed it. The window's verdict is the core's
rule; before a block is written, an optional self-check (crawler.rules.world_check)
may defer it. A block made here enters this worker's deny list at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from sqlalchemy import Engine

from crawler.core.denylist import BLOCKED
from crawler.core.hostnames import root
from crawler.core.outcomes import is_network_failure
from crawler.core.traps import trap_reason
from crawler.db.rules import deny_entries, trap_windows
from crawler.db.server.retry import in_thread_until_up
from crawler.utils.batcher import Batcher

log = logging.getLogger(__name__)

# (root, trap reason) → True to block now, False to defer.
Confirm = Callable[[str, str], Awaitable[bool]]


class TrapGuard:
    """Records (hostname, outcome) pairs and blocks proven traps."""

    def __init__(
        self,
        engine: Engine,
        size: int,
        actor: str,
        remember: Callable[[str, str], None] = lambda hostname, rule: None,
        confirm: Confirm | None = None,
        still_denied: Callable[[str], bool] = lambda domain: True,
    ) -> None:
        self.engine = engine
        self.size = size
        self.actor = actor
        self.remember = remember
        self.confirm = confirm
        self.still_denied = still_denied
        self._batcher = Batcher("recording outcomes", self._write)
        self._checking: set[str] = set()
        # Roots this guard blocked: a window that still proves them costs no second check.
        # An unblock (heard by `still_denied`, the worker's live deny list) clears the
        # root's window, so a later proof is a new one and is checked and written again.
        self._blocked: set[str] = set()

    async def observe(self, hostname: str, outcome: str) -> str | None:
        """Feed one outcome (batched with others); the reason if this blocked its root."""
        # A failure may complete a trap: it goes at once, so the block lands early.
        candidate = await self._batcher.submit((hostname, outcome), is_network_failure(outcome))
        if candidate is None:
            return None
        blocked = await self.block_proven({root(hostname): candidate})
        return blocked.get(root(hostname))

    async def observe_many(self, outcomes: Sequence[tuple[str, str]]) -> dict[str, str]:
        """Feed many outcomes in one write; {root: reason} for the roots this blocked."""
        candidates = await in_thread_until_up(
            "recording outcomes", trap_windows.record_outcomes, self.engine, outcomes, self.size
        )
        return await self.block_proven(candidates)

    def _write(self, outcomes: Sequence[tuple[str, str]]) -> list[str | None]:
        """One window write; each proven root's reason goes to its first item only."""
        proven = trap_windows.record_outcomes(self.engine, outcomes, self.size)
        return [proven.pop(root(hostname), None) for hostname, _ in outcomes]

    async def block_proven(self, proven: dict[str, str]) -> dict[str, str]:
        """Block each proven root its self-check confirms; the others wait for more outcomes."""
        blocked = {}
        for domain, reason in proven.items():
            if domain in self._blocked and not self.still_denied(domain):
                self._blocked.discard(domain)  # unblocked since: a new proof counts
            if domain in self._checking or domain in self._blocked:
                continue  # a check of this root is under way, or it is blocked already
            self._checking.add(domain)
            try:
                confirmed = self.confirm is None or await self.confirm(domain, reason)
                if confirmed and await self._block(domain, reason):
                    blocked[domain] = reason
            finally:
                self._checking.discard(domain)
        return blocked

    async def recheck_deferred(self) -> dict[str, str]:
        """Look again at every deferred block: block it, or forget it if its window no
        longer proves a trap. Returns {root: reason} for the roots this blocked."""
        deferred = await in_thread_until_up(
            "reading deferrals", trap_windows.deferrals, self.engine
        )
        proven = {}
        for domain, _ in deferred:
            window = await in_thread_until_up(
                "reading a window", trap_windows.window, self.engine, domain
            )
            reason = trap_reason(domain, window, self.size)
            if reason:
                proven[domain] = reason
            else:
                await in_thread_until_up(
                    "clearing", trap_windows.clear_deferral, self.engine, domain
                )
        return await self.block_proven(proven)

    async def _block(self, domain: str, reason: str) -> bool:
        def write() -> bool:
            note = trap_windows.wildcard_note(self.engine, domain)
            return deny_entries.upsert_blocked(self.engine, domain, reason + note, self.actor)

        blocked = await in_thread_until_up(f"blocking {domain}", write)
        await in_thread_until_up("clearing", trap_windows.clear_deferral, self.engine, domain)
        if blocked:
            self._blocked.add(domain)
            self.remember(domain, BLOCKED)
        return blocked

    async def drain(self) -> None:
        """Wait for the writes in flight (at close)."""
        await asyncio.sleep(0)
        await self._batcher.drain()
