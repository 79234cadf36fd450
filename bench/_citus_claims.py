"""bench/citus.py's claims: WORKERS spawned processes, each CALLS polite claims of BATCH
on one database, each claim timed alone and its hosts finished (scheduled a day later,
as a crawl would) before the next; one round's p95 over every claim of every process.

A crawler's claims run on long-lived connections, so each process first makes WARMUP
claims, untimed, on both deployments alike: on one server psycopg prepares a statement
after its fifth run; on a cluster each shard group's statements are prepared on the
worker at the group's first claim in a session, and the groups are served in turn (32
groups: more claims than a 25-claim round makes)."""

from __future__ import annotations

import multiprocessing as mp
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

WORKERS = 4
BATCH = 100
CALLS = 25  # per process and round
WARMUP = 40  # claims per process before the timed ones: each of 32 shard groups once
ROUND_TIMEOUT = 600  # seconds: a bound on one round, not a wait


def claim_worker(url: str, name: str, barrier, results) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sqlalchemy import create_engine, text

    from crawler.db.crawl import claims, queue

    engine = create_engine(url, pool_size=1, max_overflow=0)
    with engine.connect() as conn:  # connected before the clock starts
        conn.execute(text("SELECT 1"))

    def claim_and_finish() -> tuple[float, list[str]]:
        began = time.perf_counter()
        names = claims.claim_polite(engine, BATCH, name).hosts
        took = time.perf_counter() - began
        if names:
            with engine.begin() as conn:
                queue.schedule(conn, [(h, timedelta(days=1)) for h in names])
        return took, names

    claimed = [h for _ in range(WARMUP) for h in claim_and_finish()[1]]
    barrier.wait()
    times = []
    for _ in range(CALLS):
        took, names = claim_and_finish()
        times.append(took)
        claimed += names
    results.put((times, claimed))
    engine.dispose()


def claim_round(url: str, tag: str) -> dict:
    """One round on the database at `url`: p95 and p50 of a claim (s), hosts claimed."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(WORKERS + 1, timeout=ROUND_TIMEOUT), ctx.Queue()
    procs = [
        ctx.Process(target=claim_worker, args=(url, f"{tag}-{i}", barrier, results))
        for i in range(WORKERS)
    ]
    for p in procs:
        p.start()
    barrier.wait()  # every process imported and connected
    reports = [results.get(timeout=ROUND_TIMEOUT) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    times = [t for r in reports for t in r[0]]
    names = [n for r in reports for n in r[1]]
    assert len(names) == len(set(names)), f"{tag}: a host was claimed twice"
    return {
        "p95": statistics.quantiles(times, n=20, method="inclusive")[-1],
        "p50": statistics.median(times),
        "claimed": len(names),
    }
