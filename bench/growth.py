"""How each operation's cost grows from 1M to 10M hosts on one Postgres.

One throwaway embedded Postgres (deleted at exit), migrated, then loaded by
Postgres itself (bench/_growth_data.py, generate_series; keys and indexes
built after the load): 200,000 roots with 4 subdomains each (1,000,000 hosts),
100,000 deny entries (20,000 on roots of the corpus, their subdomains out of
routing; 80,000 with no host below; 5% blocked), trap windows (every 4th root:
its 4 subdomains) and 100,000 change-log rows. The same operations are timed; then
1,800,000 more roots (10,000,000 hosts, 1,000,000 change-log rows, the same deny
entries) are added, and they are timed again:

- claims: 4 spawned processes, each `crawler.db.crawl.claims.claim_polite(engine, 100,
  ...)` (the crawler's claim, with its per-root rules) CLAIMS times;
  claims/s (hosts) over the wall time, and the p95 of one claim;
- finish: `queue.finish_many` of 100 claimed hosts (8 links a page: 7 known
  hosts, 1 new one), hosts/s;
- saving new hosts: `queue.save_hosts` of 100 new names, names/s;
- the trap-window write: `trap_windows.record_outcomes` of 100 outcomes, µs each;
- the panel: p95 of `/`, a deep keyset page, a domain search, `/blocked`,
  `/no_follow`, `/roots` (Flask test client, logged in; 40 requests each in 4
  interleaved rounds; the strip cached as in production) and of the
  dashboard's figures (`pages.dashboard.totals`, and the whole `dashboard()`
  with its chart);
- the deny list, on its own scale: `deny_entries.deny_entries` + `DenyList` in a fresh
  process (connected, one load to warm up, then the best of 10, or 3 at 1M), seconds per
  entry (less an empty list's load, the fixed cost) and RSS growth, with 1,000 entries
  on the empty database first and with 1,001,000 at the end (10M hosts; the 100,000 of
  the corpus and 900,000 more).

Target: each 10M figure within 1.5x of its 1M figure (rates: 1M / 10M; times:
10M / 1M), and every page p95 < 100 ms at 10M; the deny list's load time per entry
at 1M entries within 1.5x of that at 1k (no verdict when the 1k list's load is within
the noise of the empty one's; its RSS per entry is printed beside it). A
figure that misses gets the EXPLAIN (ANALYZE, BUFFERS) of the statements one call runs
(in a rolled-back transaction). Last line: `growth: PASS` or `growth: FAIL`, with the
worst ratio.

`--before`: the claims and the three writes side by side with 8751fd6's code on a
database of its own, loaded the same (bench/_growth_before.py), in 5 interleaved rounds
at each size, each side's round with the page cache holding its database alone
(bench/_page_cache.py); at 10M ours / its medians must be >= 0.9 (rates) and <= 1.1 (the
trap-window write), and each size's own figures are our medians of its rounds.
`--profile`: at each size, where one finish_many and one save_hosts
batch go (bench/_growth_profile.py), ours and, with --before, 8751fd6's.
`--cluster`: the panel's pages alone, on a Citus cluster loaded the same way
(bench/_growth_cluster.py); each page's p95 < 100 ms at 10M, its growth beside it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from _common import machine_line, start_database, verdict  # noqa: E402
from _growth_before import Before  # noqa: E402
from _growth_cluster import judge, pages_at_both_sizes  # noqa: E402
from _growth_data import (  # noqa: E402
    ENTRY_ROOTS,
    STANDALONE_ENTRIES,
    SUBS_PER_ROOT,
    add_entries,
    host_name,
    load,
    root_name,
)
from _growth_panel import PASSWORD, measure_pages  # noqa: E402
from _growth_profile import profile_writes, report  # noqa: E402
from _growth_timing import explain, p95  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402

from crawler.core import config  # noqa: E402

SMALL_ROOTS, BIG_ROOTS = 200_000, 2_000_000
QUICK = "--quick" in sys.argv  # trying the script out: 100k and 1M hosts, no verdict
SMALL, BIG = "1M", "10M"  # hosts
if QUICK:
    SMALL_ROOTS, BIG_ROOTS, SMALL, BIG = 20_000, 200_000, "100k", "1M"
# The server as docs/scaling.md tunes it first (memory: a quarter of RAM for shared_buffers,
# three quarters as effective_cache_size); `--default-memory`: Postgres' 128 MB;
# `--server name=value` (repeatable): a server setting more, e.g. shared_buffers=14GB.
RAM_MB = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
SERVER = {"shared_buffers": f"{RAM_MB // 4}MB", "effective_cache_size": f"{RAM_MB * 3 // 4}MB"}
FLAGS = zip(sys.argv, sys.argv[1:], strict=False)
SERVER |= dict(arg.split("=", 1) for flag, arg in FLAGS if flag == "--server")
if "--default-memory" in sys.argv:
    SERVER = {}
# `--before`: 8751fd6's claims and writes side by side (bench/_growth_before.py), ROUNDS
# interleaved rounds a stage, ours / its medians judged at the big size (a round's claims
# take about 2 s: five rounds, as three let one slow round decide).
BEFORE_SIDE = "--before" in sys.argv
ROUNDS = 5
# `--profile`: where one finish_many and one save_hosts batch go at the big size, ours (and
# with --before 8751fd6's), at each size: statements, their time and WAL, plans, index entries.
PROFILE = "--profile" in sys.argv
WORKERS = 4
BATCH = 100
CLAIMS = 25  # per worker
WRITES = 30  # batches of finish, save and trap-window writes
TARGET_RATIO = 1.5
TARGET_PAGE_MS = 100.0
TRAP_WINDOW = config.setting("TRAP_WINDOW").default  # the crawl's window, as deployed
SMALL_LIST_FROM = 50_000_000  # standalone entry numbers of the 1k list
OUTCOMES = ["OK"] * 7 + ["DNS_NXDOMAIN"] * 2 + ["TCP_TIMEOUT"]


# -- claims: 4 processes ----------------------------------------------------------------------


def claim_worker(url: str, number: int, start, results) -> None:
    sys.path.insert(0, str(PROJECT_ROOT))
    from crawler.db.crawl import claims

    engine = create_engine(url, pool_size=1)
    claims.claim_polite(engine, 1, f"warm-{number}")  # connect before the clock starts
    start.wait()
    latencies, hosts = [], []
    for _ in range(CLAIMS):
        began = time.perf_counter()
        hosts += claims.claim_polite(engine, BATCH, f"growth-{number}").hosts
        latencies.append(time.perf_counter() - began)
    results.put((time.perf_counter(), latencies, hosts))
    engine.dispose()


def measure_claims(url: str) -> tuple[dict, list[str]]:
    ctx = mp.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=claim_worker, args=(url, i, start, results)) for i in range(WORKERS)
    ]
    for p in procs:
        p.start()
    time.sleep(3)  # let the workers import and connect (the clock starts at the event)
    began = time.perf_counter()
    start.set()
    done = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    ended = max(d[0] for d in done)
    latencies = [lat for d in done for lat in d[1]]
    hosts = [h for d in done for h in d[2]]
    assert len(hosts) == len(set(hosts)), "a host was claimed twice"
    figures = {
        "claims/s": (len(hosts) / (ended - began), "rate"),
        "claim p95 ms": (p95(latencies) * 1000, "time"),
    }
    return figures, hosts


# -- the writes -------------------------------------------------------------------------------


def crawled_batches(hosts: list[str], rng: random.Random, roots: int, tag: str) -> list[list]:
    from crawler.core.links import FilteredLinks
    from crawler.db.crawl.queue import Crawled, CrawlResult

    batches, new = [], 0
    for b in range(WRITES):
        batch = []
        for host in hosts[b * BATCH : (b + 1) * BATCH]:
            links = {host_name(rng.randrange(roots), rng.randrange(SUBS_PER_ROOT + 1))}
            links |= {host_name(rng.randrange(roots), 1) for _ in range(6)}
            new += 1
            links.add(f"{tag}n{new}.{root_name(rng.randrange(roots))}")
            result = CrawlResult("OK", 200, None, "a page")
            batch.append(Crawled(host, result, FilteredLinks.of(links, 8), timedelta(days=7)))
        batches.append(batch)
    return batches


def measure_writes(engine, hosts: list[str], roots: int, tag: str) -> tuple[dict, dict]:
    """finish_many, save_hosts, record_outcomes: the figures, and one call of each (EXPLAIN)."""
    from crawler.db.crawl import queue
    from crawler.db.rules import trap_windows

    rng = random.Random(tag)
    crawled = crawled_batches(hosts, rng, roots, tag)
    began = time.perf_counter()
    for batch in crawled:
        queue.finish_many(engine, batch)
    finish = len(crawled) * BATCH / (time.perf_counter() - began)
    names = [
        [f"{tag}s{b}-{i}.{root_name(rng.randrange(roots))}" for i in range(BATCH)]
        for b in range(WRITES)
    ]
    began = time.perf_counter()
    for batch in names:
        queue.save_hosts(engine, batch)
    save = WRITES * BATCH / (time.perf_counter() - began)
    outcomes = [
        [
            (host_name(rng.randrange(roots), 1 + i % SUBS_PER_ROOT), rng.choice(OUTCOMES))
            for i in range(BATCH)
        ]
        for _ in range(WRITES)
    ]
    began = time.perf_counter()
    for batch in outcomes:
        trap_windows.record_outcomes(engine, batch, TRAP_WINDOW)
    window_us = (time.perf_counter() - began) / (WRITES * BATCH) * 1e6
    figures = {
        "finish_many hosts/s": (finish, "rate"),
        "save_hosts names/s": (save, "rate"),
        "trap-window write µs/outcome": (window_us, "time"),
    }
    spare = hosts[WRITES * BATCH : (WRITES + 1) * BATCH]
    calls = {
        "finish_many hosts/s": lambda: queue.finish_many(
            engine, crawled_batches(spare, rng, roots, tag + "x")[0]
        ),
        "save_hosts names/s": lambda: queue.save_hosts(
            engine, [f"{tag}e{i}.{root_name(i)}" for i in range(BATCH)]
        ),
        "trap-window write µs/outcome": lambda: trap_windows.record_outcomes(
            engine, outcomes[0], TRAP_WINDOW
        ),
    }
    return figures, calls


# -- the deny list, in a fresh process ---------------------------------------------------------


def deny_worker(url: str, rounds: int, results) -> None:
    sys.path.insert(0, str(PROJECT_ROOT))
    import psutil

    from crawler.core.denylist import DenyList
    from crawler.db.rules import deny_entries

    engine = create_engine(url, pool_size=1)
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    process = psutil.Process()
    before = process.memory_info().rss
    denylist = DenyList(deny_entries.deny_entries(engine))  # warms the server's cache up
    grown = process.memory_info().rss - before
    times = []
    for _ in range(rounds):
        del denylist
        began = time.perf_counter()
        denylist = DenyList(deny_entries.deny_entries(engine))
        times.append(time.perf_counter() - began)
    results.put((min(times), grown, len(denylist)))


def measure_denylist(url: str, rounds: int = 3) -> tuple[float, float, int]:
    """(load seconds, best of `rounds`; RSS growth bytes; entries) of a fresh worker loading
    the deny list."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    p = ctx.Process(target=deny_worker, args=(url, rounds, results))
    p.start()
    found = results.get(timeout=600)
    p.join()
    return found


def compare_denylists(empty: tuple, small: tuple, big: tuple) -> float:
    """Print the deny list's figures at 1k and 1M entries; the ratio of load time per entry
    (each less the load of an empty list, the fixed cost that would flatter the 1k one)."""
    fixed = empty[0]
    (s_seconds, s_grown, s_n), (b_seconds, b_grown, b_n) = small, big
    s_per, b_per = (s_seconds - fixed) / s_n * 1e6, (b_seconds - fixed) / b_n * 1e6
    ratio = b_per / s_per if s_per > 0 else float("nan")
    # No verdict when the 1k list's load is within the noise of the empty one's (or quick).
    ok = ratio <= TARGET_RATIO if s_per > 0 and not QUICK else None
    per_entry = f"{b_per:.2f} vs {s_per:.2f} µs/entry"
    figure = f"deny list load per entry, {b_n:,} vs {s_n:,} entries"
    word = verdict(ok, figure, f"x{ratio:.2f} ({per_entry})", f"<= x{TARGET_RATIO}")
    print(
        f"deny list load: {b_n:,} entries {b_seconds:.2f} s, {s_n:,} entries"
        f" {s_seconds * 1000:.1f} ms, none {fixed * 1000:.1f} ms: less that, {per_entry}"
        f" (ratio {ratio:.2f}, target <= {TARGET_RATIO}) {word}"
    )
    print(
        f"deny list worker RSS: +{b_grown / 2**20:.0f} MB for {b_n:,} entries"
        f" ({b_grown / b_n:.0f} B/entry), +{s_grown / 2**10:.0f} KB for {s_n:,}"
        f" ({s_grown / s_n:.0f} B/entry; small lists sit in memory the process had)"
        " (diagnostic)"
    )
    return ratio


# -- one stage and the comparison -------------------------------------------------------------


def claims_and_writes(url: str, engine, roots: int, tag: str) -> tuple[dict, dict]:
    from crawler.db.crawl import claims

    figures, hosts = measure_claims(url)
    calls = {
        "claims/s": lambda: claims.claim_polite(engine, BATCH, "explain"),
        "claim p95 ms": lambda: claims.claim_polite(engine, BATCH, "explain"),
    }
    more, their_calls = measure_writes(engine, hosts, roots, tag)
    figures.update(more)
    calls.update(their_calls)
    return figures, calls


def measure_stage(url: str, engine, roots: int, tag: str, before=None) -> tuple[dict, dict]:
    if before is not None:
        before.hold("ours")
    figures, calls = claims_and_writes(url, engine, roots, tag)
    if before is not None:

        def ours(round_tag: str) -> dict:
            return claims_and_writes(url, engine, roots, round_tag)[0]

        mine, theirs = before.rounds(ours, roots, tag, figures, ROUNDS)
        before.compare(tag, mine, theirs, judge=not QUICK and tag == BIG)
        # The sizes compared by the medians of our rounds: the first round at 10M runs
        # straight after the load, cold (finish_many once 217 hosts/s, then 1,034).
        for label, (_, kind) in list(figures.items()):
            figures[label] = (statistics.median(r[label][0] for r in mine), kind)
    if PROFILE:
        if before is not None:
            before.hold("ours")
        report(f"ours at {tag}", profile_writes(sys.modules[__name__], engine, roots, tag + "p"))
        if before is not None:
            report(f"{before.commit} at {tag}", before.profile(roots, tag + "p"))
    if before is not None:  # the pages and the deny list that follow are ours alone
        before.hold("ours")
    more, their_calls = measure_pages(url, engine)
    figures.update(more)
    calls.update(their_calls)
    for label, (value, _) in figures.items():
        print(f"# {tag} {label}: {value:,.1f}", flush=True)
    return figures, calls


def compare(small: dict, big: dict) -> tuple[list[str], float]:
    """Print each figure at both sizes; the labels that missed, and the worst ratio."""
    missed, worst = [], 0.0
    for label, (one, kind) in small.items():
        ten = big[label][0]
        if kind == "info":
            print(f"{label}: {SMALL} hosts {one:,.1f}, {BIG} hosts {ten:,.1f} (diagnostic)")
            continue
        ratio = one / ten if kind == "rate" else ten / max(one, 1e-9)
        worst = max(worst, ratio)
        ok = ratio <= TARGET_RATIO
        target = f"target <= {TARGET_RATIO}"
        if kind == "page":
            ok = ok and ten < TARGET_PAGE_MS
            target += f" and < {TARGET_PAGE_MS:.0f} ms at {BIG}"
        value = f"x{ratio:.2f} ({ten:,.1f} vs {one:,.1f})"
        figure, target_ = f"{label}, {BIG} vs {SMALL} hosts", target.removeprefix("target ")
        word = verdict(None if QUICK else ok, figure, value, target_)
        print(
            f"{label}: {SMALL} hosts {one:,.1f}, {BIG} hosts {ten:,.1f}"
            f" (ratio {ratio:.2f}, {target}) {word}"
        )
        if not ok:
            missed.append(label)
    return missed, worst


def cluster_main() -> None:
    """--cluster: the pages at both sizes on a cluster whose three nodes share the one
    server's memory."""
    print(machine_line())
    sizes = ((SMALL_ROOTS, SMALL), (BIG_ROOTS, BIG))
    small, big = pages_at_both_sizes(sizes, buffers_mb=RAM_MB // 4 // 3)
    missed = judge(small, big, (SMALL, BIG), QUICK)
    word = "NO VERDICT" if QUICK else "FAIL" if missed else "PASS"
    print(f"growth --cluster: {word}")


def main() -> None:
    from crawler.db.operators import accounts

    if "--cluster" in sys.argv:
        return cluster_main()
    print(machine_line())
    started = time.perf_counter()
    url = start_database("hostcrawl-bench-growth-", server=SERVER)
    print(f"# server: {', '.join(f'{k} {v}' for k, v in SERVER.items()) or 'Postgres defaults'}")
    engine = create_engine(url, pool_size=2)
    accounts.create_user(engine, "growth", PASSWORD)
    work = tempfile.TemporaryDirectory(prefix="hostcrawl-growth-before-")
    before = Before(url, Path(work.name)) if BEFORE_SIDE else None
    entries = ENTRY_ROOTS + STANDALONE_ENTRIES
    # An empty deny list (its load is the fixed cost), then a small one alone on the empty
    # database (numbers clear of the corpus's).
    empty_list = measure_denylist(url, rounds=10)
    add_entries(engine, SMALL_LIST_FROM, SMALL_LIST_FROM + 1_000)
    small_list = measure_denylist(url, rounds=10)
    took = load(engine, (0, SMALL_ROOTS), (0, 100_000), entries=True)
    hosts = f"{SMALL_ROOTS * 5:,} hosts"
    print(f"# {SMALL}: {hosts}, {entries:,} deny entries, 100,000 changes: {took}")
    if before is not None:
        took = before.load((0, SMALL_ROOTS), (0, 100_000), entries=True)
        print(f"# {SMALL}, {before.commit}'s side, by its own loader: {took}")
    small, _ = measure_stage(url, engine, SMALL_ROOTS, SMALL, before)
    took = load(engine, (SMALL_ROOTS, BIG_ROOTS), (100_000, 1_000_000), entries=False)
    print(f"# {BIG}: {BIG_ROOTS * 5:,} hosts, 1,000,000 change-log rows: {took}")
    if before is not None:
        took = before.load((SMALL_ROOTS, BIG_ROOTS), (100_000, 1_000_000), entries=False)
        print(f"# {BIG}, {before.commit}'s side, by its own loader: {took}")
    big, calls = measure_stage(url, engine, BIG_ROOTS, BIG, before)
    missed, worst = compare(small, big)
    missed += before.missed if before is not None else []
    for label in missed:
        if label in calls:
            explain(engine, label, calls[label])
    add_entries(engine, STANDALONE_ENTRIES, STANDALONE_ENTRIES + 900_000)
    ratio = compare_denylists(empty_list, small_list, measure_denylist(url))
    worst = max(worst, ratio)
    if ratio > TARGET_RATIO:
        missed.append("deny list load")
    engine.dispose()
    if before is not None:
        before.close()
    work.cleanup()
    print(f"# {time.perf_counter() - started:.0f} s in all")
    word = "NO VERDICT" if QUICK else "FAIL" if missed else "PASS"
    print(f"growth: {word} (worst ratio {worst:.2f})")


if __name__ == "__main__":
    main()
