"""Skip known names before the database? What the best filter could save (issue 50, item 5).

Most names a page reveals are known already. A filter in front of the write (a Bloom
filter, a per-root cache, IRLbot's sorted merges) would send the database only the
others. Before building one, this measures what the best possible filter saves: one that
knows every name, costs nothing and is never wrong.

One throwaway embedded Postgres, loaded by bench/_growth_data.py as growth.py loads it
(1M hosts, then 10M), tuned as growth.py tunes it. At each size, the same crawled
batches are written by `queue.finish_many` two ways, in interleaved rounds:

- as the crawl writes them: each page's 8 names, 7 known and 1 new (growth.py's mix);
- filtered: the 7 known names taken out before the write (the perfect filter).

Each side's rounds write other hosts (the same number of each kind). Printed: finish_many
hosts/s each way at each size (the median of ROUNDS), what the perfect filter saves, and
finish_many's growth from 1M to 10M each way. A filter pays if the perfect one's growth is
within TARGET_RATIO where the unfiltered one's is not, or if it saves at least PAYS_FROM
of the write at 10M; otherwise its ceiling is the reason none is built. The figure
decides, it is no target: its row says NO VERDICT. `--quick`: 100k and 1M hosts.
"""

from __future__ import annotations

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
TARGET_RATIO = 1.5
PAYS_FROM = 0.2  # of finish_many's time at 10M


def crawled_batches(rng: random.Random, roots: int, tag: str, filtered: bool) -> list[list]:
    """BATCHES batches of BATCH crawled hosts of the loaded ones (other hosts each call),
    each page naming KNOWN_PER_PAGE known names and a new one; `filtered`: the new one
    alone, as after a perfect filter."""
    from crawler.core.links import FilteredLinks
    from crawler.db.crawl.queue import Crawled, CrawlResult

    batches = []
    for b in range(BATCHES):
        batch = []
        for i, number in enumerate(rng.sample(range(roots), BATCH)):  # a root once a batch
            host = host_name(number, rng.randrange(SUBS_PER_ROOT + 1))
            known = {host_name(rng.randrange(roots), 1) for _ in range(KNOWN_PER_PAGE)}
            names = {f"{tag}-{b}-{i}.{root_name(rng.randrange(roots))}"}
            names |= set() if filtered else known
            result = CrawlResult("OK", 200, None, "a page")
            links = FilteredLinks.of(names, KNOWN_PER_PAGE + 1)
            batch.append(Crawled(host, result, links, timedelta(days=7)))
        batches.append(batch)
    return batches


def hosts_per_second(engine, batches: list[list]) -> float:
    from crawler.db.crawl import queue

    began = time.perf_counter()
    for batch in batches:
        queue.finish_many(engine, batch)
    return sum(len(b) for b in batches) / (time.perf_counter() - began)


def measure(engine, roots: int, label: str) -> dict[str, float]:
    """finish_many hosts/s each way, the median of ROUNDS interleaved rounds."""
    rng = random.Random(label)
    rates: dict[str, list[float]] = {"as crawled": [], "filtered": []}
    hosts_per_second(engine, crawled_batches(rng, roots, f"{label}w", False))  # warm up
    for r in range(ROUNDS):
        for way in rates:
            batches = crawled_batches(rng, roots, f"{label}{r}{way[0]}", way == "filtered")
            rates[way].append(hosts_per_second(engine, batches))
    found = {way: statistics.median(values) for way, values in rates.items()}
    for way, rate in found.items():
        print(f"# {label} finish_many {way}: {rate:,.1f} hosts/s", flush=True)
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
    saves = 1 - big["as crawled"] / big["filtered"]
    growth = {way: small[way] / big[way] for way in small}
    for way, ratio in growth.items():
        print(
            f"finish_many {way}, {big_label} vs {small_label}: x{ratio:.2f}"
            f" ({big[way]:,.1f} vs {small[way]:,.1f} hosts/s)"
        )
    flattens = growth["filtered"] <= TARGET_RATIO < growth["as crawled"]
    pays = flattens or saves >= PAYS_FROM
    # No PASS or FAIL: the figure decides whether a filter is built, it is no target.
    verdict(
        None,
        f"a perfect known-name filter's saving of finish_many at {big_label}",
        f"{saves:.0%} (growth x{growth['as crawled']:.2f} -> x{growth['filtered']:.2f})",
        f"pays: >= {PAYS_FROM:.0%}, or the growth within x{TARGET_RATIO}",
    )
    print(
        f"a perfect filter saves {saves:.0%} of finish_many at {big_label}; its growth"
        f" x{growth['as crawled']:.2f} without, x{growth['filtered']:.2f} with: a filter"
        f" {'pays' if pays else 'does not pay'} (pays: saves >= {PAYS_FROM:.0%}, or"
        f" brings the growth within x{TARGET_RATIO})"
    )


if __name__ == "__main__":
    main()
