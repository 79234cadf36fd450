"""bench/roundtrips.py's crawl without the web: the database calls one crawler worker makes
for the pages it crawls, in the order and batches it makes them, through the same
functions, on a database loaded by bench/_growth_data.py.

What a worker calls per page (crawler/spiders/hosts.py, crawler/pipelines.py,
crawler/shared.py, crawler/rules/trap_guard.py, crawler/extensions/heartbeat.py):

- the claim: `claims.claim_polite` for a claim's worth of hosts, then
  `unfinished.count_claims` over what it took (the spider's two calls a claim). The spider
  claims when a CLAIM_BATCH of slots is free, and fills the room up to MAX_CLAIM_BATCHES
  batches: here, claims of the finish batch's size within those bounds, until a finish
  batch is claimed;
- the finish: `queue.finish_many` of a batch of pages (the pipeline's Batcher gathers the
  pages settled meanwhile, up to 512), each with its result and its links;
- the trap window: `trap_windows.record_outcomes` of the batch's subdomains (the trap
  guard's Batcher: a failure sends its batch at once, so a batch ends at each failure);
- the heartbeat: `heartbeats.beat` every HEARTBEAT seconds (counted apart: per page it
  is a beat's trips over the pages of HEARTBEAT seconds).

Not here: what a crawl does now and then rather than per page (the drain check at its
end, a poison pill's settling, a wildcard probe past its threshold, a flood's mark, a
block), and the deny list's load.

The pages: every FAIL_EVERY-th fails at DNS (no links, its outcome into the window);
the others are OK, each with KNOWN_LINKS names the database knows (of the loaded hosts)
and NEW_LINKS it does not (a new subdomain of a loaded root, and a new root): "two new
names a page", as issue 50 counts a crawl's discovery.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import timedelta

from _growth_data import SUBS_PER_ROOT, host_name, root_name

from crawler.core import config
from crawler.core.hostnames import root
from crawler.core.links import FilteredLinks
from crawler.core.outcomes import DNS_NXDOMAIN, OK, is_network_failure
from crawler.db.crawl import claims, queue, unfinished
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import trap_windows

CLAIM_BATCH = config.setting("CLAIM_BATCH").default
MOST_CLAIMED = 8 * CLAIM_BATCH  # crawler/spiders/hosts.py MAX_CLAIM_BATCHES
TRAP_WINDOW = config.setting("TRAP_WINDOW").default
RECRAWL_AFTER = timedelta(seconds=config.setting("RECRAWL_AFTER").default)
LEASE = timedelta(seconds=config.setting("CLAIM_LEASE").default)
LIMITS = claims.RootLimits(
    config.setting("ROOT_CONCURRENCY").default, config.setting("ROOT_BUDGET").default
)
FAIL_EVERY = 4
KNOWN_LINKS = 6
NEW_LINKS = 2
PLACE = "a href"

# (kind of call, the call) -> its result: how the loop runs each call (counted or not).
Run = Callable[[str, Callable[[], object]], object]


def plainly(kind: str, call: Callable[[], object]) -> object:
    return call()


class Pages:
    """What crawling each claimed host found, made up from a fixed seed."""

    def __init__(self, loaded_roots: int, tag: str, seed: int = 20261207) -> None:
        self.rng = random.Random(f"{seed}-{tag}")
        self.roots = loaded_roots
        self.tag = tag
        self.made = 0

    def crawled(self, hostname: str) -> Crawled:
        self.made += 1
        if self.made % FAIL_EVERY == 0:
            return Crawled(hostname, CrawlResult(DNS_NXDOMAIN), FilteredLinks(), RECRAWL_AFTER)
        rng, n = self.rng, self.made
        known = {
            host_name(rng.randrange(self.roots), rng.randrange(SUBS_PER_ROOT + 1))
            for _ in range(KNOWN_LINKS)
        }
        new = {
            f"p{n}-{self.tag}.{root_name(rng.randrange(self.roots))}",
            f"p{n}-{self.tag}-{rng.randrange(10**9)}.com",
        }
        links = FilteredLinks.of(dict.fromkeys((known | new) - {hostname}, PLACE))
        result = CrawlResult(OK, 200, f"https://{hostname}/", f"Home of {hostname}", "https")
        return Crawled(hostname, result, links, RECRAWL_AFTER)


def claim_size(finish_batch: int) -> int:
    """A claim's size: the room a finish batch frees, at least a CLAIM_BATCH (the spider
    waits for that much room), at most MAX_CLAIM_BATCHES of them."""
    return min(max(finish_batch, CLAIM_BATCH), MOST_CLAIMED)


def trap_batches(crawled: Sequence[Crawled]) -> list[list[tuple[str, str]]]:
    """The subdomains' outcomes as the trap guard sends them: a failure closes a batch."""
    batches, batch = [], []
    for host in crawled:
        if root(host.hostname) == host.hostname:
            continue  # a root's own outcome is not in a window
        batch.append((host.hostname, host.result.outcome))
        if is_network_failure(host.result.outcome):
            batches.append(batch)
            batch = []
    return [*batches, batch] if batch else batches


class Worker:
    """One crawler worker's database calls: its engine, its name, the hosts it holds."""

    def __init__(self, engine, name: str, pages: Pages) -> None:
        self.engine = engine
        self.name = name
        self.pages = pages
        self.held: list[str] = []  # claimed, not finished yet

    def claim(self, finish_batch: int, run: Run) -> None:
        """Claims until a finish batch's worth is held (or nothing more is due)."""
        size = claim_size(finish_batch)
        while len(self.held) < finish_batch:
            took = run("claim", lambda: self._claim(size)).hosts
            if not took:
                return
            run("claim", lambda hosts=took: unfinished.count_claims(self.engine, hosts))
            self.held += took

    def _claim(self, n: int) -> claims.Claim:
        return claims.claim_polite(self.engine, n, self.name, LEASE, LIMITS)

    def crawl(self, finish_batch: int, run: Run = plainly) -> int:
        """One finish batch's pages crawled: claimed, finished, their outcomes windowed.
        How many (0: nothing was due)."""
        self.claim(finish_batch, run)
        batch, self.held = self.held[:finish_batch], self.held[finish_batch:]
        if not batch:
            return 0
        crawled = [self.pages.crawled(h) for h in batch]
        run("finish", lambda: queue.finish_many(self.engine, crawled))
        for outcomes in trap_batches(crawled):
            run(
                "trap window",
                lambda o=outcomes: trap_windows.record_outcomes(self.engine, o, TRAP_WINDOW),
            )
        return len(batch)
