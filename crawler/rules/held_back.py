"""Hosts held back in an outage: asked again once, when it ends, not on a timer.

A failure that the world check finds ours (crawler.rules.world_check) says nothing about
the host. The host is not settled: it stays claimed by this worker, its lease renewed
while the outage lasts, so no other worker takes it; and a draining crawl waits for it
whatever its row's date (crawler.db.crawl.claims: a host held back and not settled since
is pending). When the world answers again (the check's event, not a clock), every host
held back is given back due now, and the crawl asks it once more. A host whose request
began in an outage that has ended by the time it failed is given back at once. A lease
that ran out all the same (a worker stalled past two thirds of it) brings the host back
to this worker's own claim: still held, it is not fetched. A worker that stops gives
back what it holds; one killed leaves it to the lease, as any claim.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import Engine

from crawler.db.crawl import queue
from crawler.db.server.retry import in_thread_until_up
from crawler.rules.world_check import WorldCheck

log = logging.getLogger(__name__)


class HeldBack:
    """This worker's hosts held back in the outage going on (`hosts`), released at its end."""

    def __init__(self, engine: Engine, worker: str, lease: timedelta, world: WorldCheck) -> None:
        self.engine = engine
        self.worker = worker
        self.lease = lease
        self.world = world
        self._hosts: set[str] = set()
        # Given back at an outage's end, not yet answered since: their next failure settles.
        self._asked_again: set[str] = set()

    def renew_every(self) -> float:
        """Seconds between renewals of the leases held: a third of a lease."""
        return self.lease.total_seconds() / 3

    def hosts(self) -> set[str]:
        return set(self._hosts)

    def asked_again(self, hostname: str) -> bool:
        """Whether `hostname` was held back and given back already (forgotten once asked):
        its answer now settles it, whatever the world check says. An outage that flaps (a
        world half there) would otherwise hold and give back one host for ever."""
        if hostname in self._asked_again:
            self._asked_again.discard(hostname)
            return True
        return False

    def not_held(self, claimed: list[str]) -> list[str]:
        """Of hosts this worker just claimed, the ones to fetch: a host it holds back came
        back to its claim because the lease ran out; the claim renewed it, and it waits
        for the outage's end like the others, not asked again on that timer."""
        return [h for h in claimed if h not in self._hosts]

    async def hold(self, hostname: str, outcome: str) -> None:
        """Keep `hostname` claimed until the outage ends; given back at once if it has
        ended (or a new one begun) while the hold was written."""
        spell = self.world.spell
        hold = queue.retry_soon
        await in_thread_until_up(
            "holding a host back", hold, self.engine, [hostname], self.lease, outcome
        )
        if self.world.unproven_since is not None and self.world.spell == spell:
            self._hosts.add(hostname)
            return
        await self._release([hostname])

    async def renew(self) -> None:
        """The hosts held keep their claim however long the outage lasts (a lease that ran
        out would hand them to a claim: tried again on a timer, not at the end)."""
        if not self._hosts:
            return
        renew, hosts = queue.renew_held, sorted(self._hosts)
        args = (self.engine, hosts, self.worker, self.lease)
        await in_thread_until_up("renewing the claims of hosts held back", renew, *args)

    async def release_all(self) -> None:
        """The world answers again (or the worker stops): every host held is due now."""
        hosts, self._hosts = sorted(self._hosts), set()
        if hosts:
            await self._release(hosts)
            log.info("%d hosts held back in the outage are due again now", len(hosts))

    async def _release(self, hosts: list[str]) -> None:
        self._asked_again.update(hosts)
        release = queue.release_held
        await in_thread_until_up(
            "giving back hosts held back", release, self.engine, hosts, self.worker
        )
