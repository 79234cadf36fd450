"""Claims per second of claims.claim with 4 worker processes, against a bare claim.

Targets: claims/s of claims.claim >= 0.5 x the bare claim's, and 0 duplicates.

A throwaway embedded Postgres (deleted at exit) is migrated and loaded with
ROWS due hosts via queue.save_hosts and a few deny entries via
entries.add_no_follow: some added before their hosts were saved (so only the
claim's deny-entry check keeps those hosts out) and some after (so the entry
took its hosts out of routing). WORKERS spawned processes, each with its own
engine, then claim BATCH at a time until a claim comes back empty.

Baseline, same database and processes, rounds alternating (ours, bare, ours,
bare; best of each): the bare SKIP LOCKED claim on the same partial index, with
no deny-entry check

    WITH c AS (SELECT hostname FROM queue
                WHERE status_reason IS NULL AND denied_by IS NULL AND next_claim_at <= now()
               ORDER BY next_claim_at LIMIT :n FOR UPDATE SKIP LOCKED)
    UPDATE queue q SET next_claim_at = now() + interval '10 minutes'
      FROM c WHERE q.hostname = c.hostname RETURNING q.hostname

Before each round every dated row is made due again and the table vacuumed.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import sys
import time
from collections import Counter

from _common import machine_line, registered_domain, start_database, subdomain_of, verdict
from sqlalchemy import create_engine, text

from crawler.db import claims, entries, queue
from crawler.db.claims import CLAIM_ALL, DEFAULT_LEASE
from crawler.denylist import DenyList

ROWS = 20_000
BATCH = 100
WORKERS = 4
ROUNDS = 3  # of each, alternating
TARGET = 0.5

BARE = text(
    """
    WITH c AS (SELECT hostname FROM queue
                WHERE status_reason IS NULL AND denied_by IS NULL AND next_claim_at <= now()
               ORDER BY next_claim_at LIMIT :n FOR UPDATE SKIP LOCKED)
    UPDATE queue q SET next_claim_at = now() + interval '10 minutes'
      FROM c WHERE q.hostname = c.hostname RETURNING q.hostname
    """
)
NO_CHECK = " (it has no deny check)"
RESET = text(
    "UPDATE queue SET next_claim_at = now() - interval '1 hour', claimed_by = NULL"
    " WHERE next_claim_at IS NOT NULL"
)


def worker(url: str, name: str, commands, results, barrier) -> None:
    """One crawler-like process: its own engine; claims until the queue is drained."""
    engine = create_engine(url, pool_size=1, max_overflow=0)
    with engine.connect() as conn:  # open the pooled connection before any timing
        conn.execute(text("SELECT 1"))
    while True:
        mode = commands.get()
        if mode is None:
            break
        claimed: list[str] = []
        calls = 0
        barrier.wait()
        start = time.perf_counter()
        while True:
            calls += 1
            if mode == "ours":
                names = claims.claim(engine, BATCH, name)
            else:
                with engine.begin() as conn:
                    names = [h for (h,) in conn.execute(BARE, {"n": BATCH})]
            if not names:
                break
            claimed.extend(names)
        results.put((name, start, time.perf_counter(), calls, claimed))
    engine.dispose()


def hostnames(rng: random.Random) -> tuple[list[str], list[str]]:
    """ROWS realistic names, and the big sites (a root with many subdomains) among them."""
    sites = sorted({registered_domain(rng) for _ in range(60)})
    names = set(sites)
    for site in sites:
        names.update(subdomain_of(site, rng, rng.choice((1, 1, 2))) for _ in range(30))
    while len(names) < ROWS:
        names.add(subdomain_of(registered_domain(rng), rng, rng.choice((0, 0, 1, 1, 2))))
    return sorted(names), sites


def load(engine, rng: random.Random) -> tuple[int, DenyList]:
    names, sites = hostnames(rng)
    before, after = sites[:3], sites[3:6]
    entries.add_no_follow(engine, [*before, "doubleclick.net"], note="bench")
    for i in range(0, len(names), 1_000):
        queue.save_hosts(engine, names[i : i + 1_000])
    entries.add_no_follow(engine, [*after, "googlesyndication.com"], note="bench")
    denylist = DenyList(entries.deny_entries(engine))
    under = sum(denylist.denial(n) is not None for n in names)
    print(
        f"# loaded {len(names):,} due hosts; {len(denylist)} no_follow entries cover {under}"
        f" of them ({len(before)} entries added before their hosts were saved,"
        f" {len(after)} after)"
    )
    return len(names), denylist


def reset(engine) -> None:
    with engine.begin() as conn:
        conn.execute(RESET)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE queue"))


def run_round(mode: str, commands, results, barrier) -> dict:
    for q in commands:
        q.put(mode)
    barrier.wait()
    reports = [results.get() for _ in commands]
    start = min(r[1] for r in reports)
    end = max(r[2] for r in reports)
    names = [n for r in reports for n in r[4]]
    counts = Counter(names)
    return {
        "seconds": end - start,
        "claimed": len(names),
        "duplicates": sum(c - 1 for c in counts.values() if c > 1),
        "names": counts.keys(),
        "calls": sum(r[3] for r in reports),
    }


def explain(engine, sql, params) -> list[str]:
    """EXPLAIN ANALYZE of one claim on a freshly reset queue, rolled back."""
    reset(engine)
    with engine.connect() as conn:
        rows = conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + sql.text), params)
        plan = [r[0] for r in rows]
        conn.rollback()
    return plan


def main() -> None:
    print(machine_line())
    rng = random.Random(20261130)
    url = start_database()
    engine = create_engine(url, pool_size=2)
    rows, denylist = load(engine, rng)

    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WORKERS + 1)
    results = ctx.Queue()
    commands = [ctx.Queue() for _ in range(WORKERS)]
    procs = [
        ctx.Process(target=worker, args=(url, f"bench-{i}", commands[i], results, barrier))
        for i in range(WORKERS)
    ]
    for p in procs:
        p.start()

    runs: dict[str, list[dict]] = {"ours": [], "bare": []}
    try:
        for _ in range(ROUNDS):
            for mode in ("ours", "bare"):
                reset(engine)
                r = run_round(mode, commands, results, barrier)
                runs[mode].append(r)
                denied = sum(denylist.denial(n) is not None for n in r["names"])
                print(
                    f"# round {mode}: {r['claimed']:,} claimed in {r['seconds']:.2f} s"
                    f" ({r['calls']} claim calls), {r['duplicates']} duplicates,"
                    f" {denied} under a deny entry{NO_CHECK if mode == 'bare' else ''}"
                )
                r["denied"] = denied
    finally:
        for q in commands:
            q.put(None)
        for p in procs:
            p.join(timeout=30)

    best = {mode: max(rs, key=lambda r: r["claimed"] / r["seconds"]) for mode, rs in runs.items()}
    rate = {mode: r["claimed"] / r["seconds"] for mode, r in best.items()}
    ratio = rate["ours"] / rate["bare"]
    dups = max(r["duplicates"] for rs in runs.values() for r in rs)
    denied = max(r["denied"] for r in runs["ours"])
    print(f"# {WORKERS} spawned processes, batch {BATCH}, {rows:,} rows, best of {ROUNDS} each")
    print(f"bare SKIP LOCKED claim: {rate['bare']:,.0f} claims/s (baseline)")
    print(
        f"claims.claim: {rate['ours']:,.0f} claims/s"
        f" (ratio vs bare claim: {ratio:.2f}, target >= {TARGET}) {verdict(ratio >= TARGET)}"
    )
    print(
        f"claims.claim duplicates: {dups} (target 0) {verdict(dups == 0)};"
        f" hosts under a deny entry claimed: {denied} (target 0) {verdict(denied == 0)}"
    )
    # Below target, show the claim's plan; --explain shows the bare claim's as well.
    plans = [("CLAIM_ALL", CLAIM_ALL, {"n": BATCH, "worker": "explain", "lease": DEFAULT_LEASE})]
    if "--explain" in sys.argv:
        plans.append(("bare claim", BARE, {"n": BATCH}))
    if ratio < TARGET or "--explain" in sys.argv:
        for title, sql, params in plans:
            print(f"# EXPLAIN (ANALYZE, BUFFERS) {title}, one batch of {BATCH} on a fresh queue:")
            for line in explain(engine, sql, params):
                print("#   " + line)
    engine.dispose()


if __name__ == "__main__":
    main()
