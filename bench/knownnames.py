"""finish_many through the known names (crawler.db.crawl.known_names), against no filter
and against the best filter there could be (issue 50, item 5: skip known names before
the database).

One throwaway embedded Postgres, loaded by bench/_growth_data.py as growth.py loads it
(1M hosts, then 10M), tuned as growth.py tunes it. At each size, crawled batches are
written by `queue.finish_many` three ways, in interleaved rounds, each way other hosts of
the same kind:

- as crawled, no filter (the known names' size 0): each page's 8 names, 7 known and 1
  new (growth.py's mix), the known ones picked by Zipf's law (`popularity`: the web's
  links fall on a few hosts named by most pages and a long tail);
- filtered: the 7 known names taken out before the write, a filter that knows every name,
  costs nothing and is never wrong: the ceiling, a figure;
- through the cache: as crawled, through the worker's known names (KNOWN_NAMES' default
  100,000), warm from the rounds before.

Printed: finish_many hosts/s each way at each size (the median of ROUNDS), the share of
names the cache left out, the ceiling. Targets: through the cache >= TARGET_SPEEDUP times
no filter at 10M, and finish_many's growth from 1M to 10M through it <= TARGET_RATIO.
`--quick`: 100k and 1M hosts, no verdict.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from _common import machine_line, start_database, verdict  # noqa: E402
from _growth_data import SUBS_PER_ROOT, host_name, load, root_name  # noqa: E402
from sqlalchemy import create_engine  # noqa: E402

QUICK = "--quick" in sys.argv
SIZES = ((200_000, "1M"), (2_000_000, "10M"))
if QUICK:
    SIZES = ((20_000, "100k"), (200_000, "1M"))
RAM_MB = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
SERVER = {"shared_buffers": f"{RAM_MB // 4}MB", "effective_cache_size": f"{RAM_MB * 3 // 4}MB"}
BATCH, BATCHES, ROUNDS = 100, 10, 5
KNOWN_PER_PAGE = 7
# The ways each batch is written: {way: the known-name cache's size (0: none)}.
WAYS = {"as crawled": 0, "filtered": 0, "through the cache": 100_000}
TARGET_RATIO = 1.5  # finish_many's growth from the small size to the big one
TARGET_SPEEDUP = 1.2  # the cache against no filter, at the big size


def crawled_batches(rng: random.Random, roots: int, tag: str, filtered: bool) -> list[list]:
    """BATCHES batches of BATCH crawled hosts of the loaded ones (other hosts each call),
    each page naming KNOWN_PER_PAGE known names and a new one; `filtered`: the new one
    alone, as after a perfect filter."""
    from crawler.core.links import FilteredLinks
    from crawler.db.crawl.queue import Crawled, CrawlResult

    popular = popularity(roots)
    batches = []
    for b in range(BATCHES):
        batch = []
        for i, number in enumerate(rng.sample(range(roots), BATCH)):  # a root once a batch
            host = host_name(number, rng.randrange(SUBS_PER_ROOT + 1))
            picked = rng.choices(range(roots), cum_weights=popular, k=KNOWN_PER_PAGE)
            known = {host_name(n, 1) for n in picked}
            names = {f"{tag}-{b}-{i}.{root_name(rng.randrange(roots))}"}
            names |= set() if filtered else known
            result = CrawlResult("OK", 200, None, "a page")
            links = FilteredLinks.of(names, KNOWN_PER_PAGE + 1)
            batch.append(Crawled(host, result, links, timedelta(days=7)))
        batches.append(batch)
    return batches


@functools.cache
def popularity(roots: int) -> list[float]:
    """Cumulative weights of the roots as link targets: root n's weight 1 / (n + 1), Zipf's
    law with exponent 1, as the links of the web fall on its hosts (a few named by most
    pages, a long tail named once): the model behind the cache's hit rate."""
    return list(itertools.accumulate(1 / (n + 1) for n in range(roots)))


def hosts_per_second(engine, batches: list[list]) -> float:
    from crawler.db.crawl import queue

    began = time.perf_counter()
    for batch in batches:
        queue.finish_many(engine, batch)
    return sum(len(b) for b in batches) / (time.perf_counter() - began)


def measure(engine, roots: int, label: str) -> dict[str, float]:
    """finish_many hosts/s each way, the median of ROUNDS interleaved rounds."""
    from crawler.db.crawl import known_names

    rng = random.Random(label)
    rates: dict[str, list[float]] = {way: [] for way in WAYS}
    known = known_names.set_size(engine, 0)
    hosts_per_second(engine, crawled_batches(rng, roots, f"{label}w", False))  # warm up
    skipped = named = 0
    for r in range(ROUNDS):
        for way, cache_size in WAYS.items():
            batches = crawled_batches(rng, roots, f"{label}{r}{way[0]}", way == "filtered")
            known = known_names.set_size(engine, cache_size)
            before = known.skipped
            rates[way].append(hosts_per_second(engine, batches))
            if cache_size:
                skipped += known.skipped - before
                named += sum(len(c.links.names) for batch in batches for c in batch)
    found = {way: statistics.median(values) for way, values in rates.items()}
    for way, rate in found.items():
        print(f"# {label} finish_many {way}: {rate:,.1f} hosts/s", flush=True)
    found["hit rate"] = skipped / max(named, 1)
    print(f"# {label} the cache left out {found['hit rate']:.0%} of the names", flush=True)
    return found


def main() -> None:
    print(machine_line())
    url = start_database("hostcrawl-bench-known-", server=SERVER)
    engine = create_engine(url, pool_size=2)
    found, loaded = {}, 0
    for roots, label in SIZES:
        took = load(engine, (loaded, roots), (loaded // 2, roots // 2), entries=loaded == 0)
        print(f"# {label}: {roots * 5:,} hosts loaded: {took}", flush=True)
        loaded = roots
        found[label] = measure(engine, roots, label)
    engine.dispose()
    (_, small), (_, big) = SIZES
    judge(found[small], found[big], small, big)


def judge(small: dict, big: dict, small_label: str, big_label: str) -> None:
    """The perfect filter's ceiling (a figure), then the cache's verdicts: its speed-up over
    no filter at the big size, and finish_many's growth through it."""
    ways = list(WAYS)
    growth = {way: small[way] / big[way] for way in ways}
    for way in ways:
        print(
            f"finish_many {way}, {big_label} vs {small_label}: x{growth[way]:.2f}"
            f" ({big[way]:,.1f} vs {small[way]:,.1f} hosts/s)"
        )
    ceiling = 1 - big["as crawled"] / big["filtered"]
    print(f"a perfect filter saves {ceiling:.0%} of finish_many at {big_label} (diagnostic)")
    speedup = big["through the cache"] / big["as crawled"]
    hits = f"the cache left out {big['hit rate']:.0%} of the names"
    word = verdict(
        None if QUICK else speedup >= TARGET_SPEEDUP,
        f"finish_many through the known names vs without, {big_label} hosts",
        f"x{speedup:.2f} ({hits})",
        f">= x{TARGET_SPEEDUP}",
    )
    print(f"finish_many through the known names at {big_label}: x{speedup:.2f}, {hits} {word}")
    cached = growth["through the cache"]
    word = verdict(
        None if QUICK else cached <= TARGET_RATIO,
        f"finish_many through the known names, {big_label} vs {small_label} hosts",
        f"x{cached:.2f} (without: x{growth['as crawled']:.2f})",
        f"<= x{TARGET_RATIO}",
    )
    print(
        f"finish_many's growth through the known names: x{cached:.2f}"
        f" (without them x{growth['as crawled']:.2f}; target <= x{TARGET_RATIO}) {word}"
    )


if __name__ == "__main__":
    main()
