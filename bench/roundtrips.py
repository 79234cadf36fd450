"""What a crawled page costs the database in round trips, bytes and row writes, on one
Postgres server and on a one-machine Citus cluster (a coordinator and two workers, SHARDS
shards a table, as Citus makes them by default): the measured inputs of docs/scaling.md's
"A billion hosts on paper".

Both deployments are bench/_citus_nodes.py's (the same PostgreSQL 16 binaries and
settings), migrated by `upgrade_to_head()`, each loaded with the same LOADED_ROOTS roots
of 5 hosts (bench/_growth_data.py, generate_series) and every host made due.

1. Bytes per host: every distributed table and its indexes (the per-root ones: hosts,
   roots, trap_window ...), the shards' sizes summed (citus_table_size,
   citus_total_relation_size), over the hosts; one server's same tables beside it, and
   each index's bytes a host. Target: the cluster's <= 1.1x one server's (sharding
   stores the same rows).
2. Round trips (counts: deterministic, valid on a busy machine): the database calls of
   crawling PAGES pages as one crawler worker makes them (bench/_page_work.py: the
   polite claim and its count, finish_many with each page's links, the trap-window
   writes; the heartbeat apart), through the crawler's own engine (get_engine:
   pre-ping, psycopg's prepared statements), after WARMUP_PAGES uncounted (a crawler's
   connections are long-lived: its statements prepared, its claim's shard groups each
   visited). Counted by bench/_roundtrips.py: client -> server round trips on the wire
   (libpq's trace: statements, BEGIN, COMMIT, pre-pings), and the coordinator's commands
   to its workers (citus.log_remote_commands), all of them and their critical path (per
   client call, the most on one connection). Per finish batch size (FINISH_BATCHES: the
   pipeline's Batcher gathers the pages settled while the previous batch was written).
   Their cost at TRIP_MS a round trip (a LAN; this kernel has no netem to delay them),
   a page and a second of one worker at WORKER_PAGES_PER_S. Targets at HEADLINE_BATCH:
   client round trips a page <= CLIENT_TRIPS_TARGET, and the network wait of a
   worker's second <= WAIT_TARGET (the finish, the claim and the trap writes each wait
   in their own thread, one call at a time: a wait near a second a second would bound
   the worker).
3. Row writes per worker: SUSTAIN_PROCESSES processes crawling as in 2 (finish batches
   of HEADLINE_BATCH, no counting) for SUSTAIN_SECONDS, on each deployment in turn; row
   versions written (pg_stat_database: inserted + updated + deleted) and WAL bytes
   (pg_stat_wal) on each node over the run, a second and a page. The machine's 2 cores
   run the processes and every server at once: the rates are what this machine sustained,
   a floor of a node's capacity; beside them, the CPU each server spent (/proc). Target:
   each Citus worker >= WRITES_TARGET row writes/s, what each of 10 workers must write
   for 1B hosts visited weekly (docs/scaling.md, "A billion hosts on paper").

--quick: smaller sizes (LOADED_ROOTS / 10, fewer pages, 15 s), figures, NO VERDICT.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

import _page_work as work  # noqa: E402
from _citus_nodes import cpu_seconds, start_cluster, start_one_server, vacuum_everywhere  # noqa: E402
from _common import machine_line, verdict  # noqa: E402
from _growth_data import SUBS_PER_ROOT, load  # noqa: E402
from _roundtrips import RoundTripCounter, Trips, with_remote_commands  # noqa: E402
from _sizes import bytes_per_host, index_bytes, per_root_tables  # noqa: E402
from claims import reset as make_every_host_due  # noqa: E402
from sqlalchemy import create_engine  # noqa: E402

QUICK = "--quick" in sys.argv
SHARDS = 32  # Citus's default citus.shard_count: what `hostcrawl db upgrade` makes
LOADED_ROOTS = 20_000 if QUICK else 200_000  # x5 hosts
PAGES = 256 if QUICK else 1024  # counted, per finish batch size
WARMUP_PAGES = 1024 if QUICK else 6144
FINISH_BATCHES = (8, 32, 128, 512)
HEADLINE_BATCH = 32
HEARTBEATS = 5
TRIP_MS = 0.5
# One crawler worker's pages/s (bench/crawl.py over https, 209-258 pages/s: docs/scaling.md).
WORKER_PAGES_PER_S = 250
SUSTAIN_PROCESSES = 4
SUSTAIN_SECONDS = 15 if QUICK else 60
ROUND_TIMEOUT = 900
SIZE_TARGET = 1.1
CLIENT_TRIPS_TARGET = 1.5  # x one server's
WAIT_TARGET = 0.5
WRITES_TARGET = 2_000  # 1B hosts weekly: 1,653 pages/s x ~12 rows / 10 workers
MODES = ("one server", "cluster")
KINDS = ("claim", "finish", "trap window")


def judged(ok: bool) -> bool | None:
    return None if QUICK else ok


# -- 2. round trips -----------------------------------------------------------------------


def count_pages(url: str, mode: str) -> dict:
    """{finish batch: {kind: Trips}, "pages": {batch: pages}, "beat": Trips a heartbeat}."""
    from crawler.db.crawl import heartbeats
    from crawler.db.server.engine import get_engine

    # The crawler's engine, a URL of its own: Citus tells each command it sends a worker.
    counted = f"{url}?application_name=roundtrips"
    engine = get_engine(with_remote_commands(counted) if mode == "cluster" else counted)
    counter = RoundTripCounter(engine)
    name = f"trips-{mode.replace(' ', '-')}"
    worker = work.Worker(engine, name, work.Pages(LOADED_ROOTS, "counted"))
    done = 0
    while done < WARMUP_PAGES:
        crawled = worker.crawl(HEADLINE_BATCH)
        if not crawled:
            raise RuntimeError(f"{mode}: nothing due after {done} pages of warm-up")
        done += crawled
    found: dict = {"pages": {}}
    for batch in FINISH_BATCHES:
        trips: dict[str, Trips] = defaultdict(Trips)

        def run(kind, call, trips=trips):
            counted, result = counter.measure(call)
            trips[kind] += counted
            return result

        done = 0
        while done < PAGES:
            crawled = worker.crawl(batch, run)
            if not crawled:
                raise RuntimeError(f"{mode}: nothing due after {done} pages")
            done += crawled
        found[batch], found["pages"][batch] = dict(trips), done
    beat = heartbeats.Beat(name, "bench", os.getpid(), datetime.now(UTC), 0, 0.0)
    beats = [counter.measure(lambda: heartbeats.beat(engine, beat))[0] for _ in range(HEARTBEATS)]
    found["beat"] = sum(beats, Trips())
    engine.dispose()
    return found


def per_page(trips: dict[str, Trips], pages: int) -> tuple[float, float, float]:
    """(client, coordinator -> worker, its critical path) round trips a page."""
    total = sum(trips.values(), Trips())
    return total.client / pages, total.remote / pages, total.remote_serial / pages


def report_trips(mode: str, found: dict) -> None:
    beat, rate = found["beat"], WORKER_PAGES_PER_S
    beat_share = (beat.client / HEARTBEATS) / (5.0 * rate)  # heartbeats.HEARTBEAT
    for batch in FINISH_BATCHES:
        trips, pages = found[batch], found["pages"][batch]
        client, remote, serial = per_page(trips, pages)
        kinds = ", ".join(f"{k} {trips[k].client / pages:.2f}" for k in KINDS if k in trips)
        paths = ", ".join(f"{k} {trips[k].remote_serial / pages:.2f}" for k in KINDS if k in trips)
        total = sum(trips.values(), Trips())
        wire = ", ".join(f"{k} {n:,}" for k, n in sorted(total.kinds.items()))
        line = (
            f"# {mode}, finish batches of {batch}: {pages:,} pages, client round trips"
            f" {client:.2f} a page ({kinds}; on the wire {wire}; {total.statements:,}"
            f" statements, {total.checkouts:,} checkouts)"
        )
        if mode == "cluster":
            line += (
                f"; coordinator -> worker {remote:.2f} a page, critical path {serial:.2f} ({paths})"
            )
        print(line)
    print(
        f"# {mode}: a heartbeat {beat.client / HEARTBEATS:.1f} client round trips"
        f" ({beat.remote / HEARTBEATS:.1f} to workers), every 5 s: {beat_share:.4f} a page"
        f" at {rate} pages/s"
    )


def judge_trips(found: dict) -> None:
    """The cluster's figures at HEADLINE_BATCH against their targets, one server's beside."""
    base = per_page(
        found["one server"][HEADLINE_BATCH], found["one server"]["pages"][HEADLINE_BATCH]
    )
    trips = found["cluster"][HEADLINE_BATCH]
    client, remote, serial = per_page(trips, found["cluster"]["pages"][HEADLINE_BATCH])
    at = f"finish batches of {HEADLINE_BATCH}"
    print(f"one server: {base[0]:.2f} client round trips a page, {at} (baseline)")
    ratio = client / base[0]
    word = verdict(
        judged(ratio <= CLIENT_TRIPS_TARGET),
        "client round trips a page vs one server",
        f"x{ratio:.2f} ({client:.2f} vs {base[0]:.2f})",
        f"<= x{CLIENT_TRIPS_TARGET}",
    )
    print(
        f"cluster: {client:.2f} client round trips a page, {at} (ratio vs one server:"
        f" {ratio:.2f}, target <= {CLIENT_TRIPS_TARGET}) {word}"
    )
    print(
        f"cluster: {remote:.2f} coordinator -> worker round trips a page, {serial:.2f} on the"
        f" critical path (the rest in parallel), {at}"
    )
    wait_ms = (client + serial) * TRIP_MS
    second = wait_ms * WORKER_PAGES_PER_S / 1000
    word = verdict(
        judged(second <= WAIT_TARGET),
        f"network wait of a worker's second at {TRIP_MS} ms a trip",
        f"{second:.2f} s",
        f"<= {WAIT_TARGET} s",
    )
    print(
        f"cluster: at {TRIP_MS} ms a round trip, {wait_ms:.2f} ms of network wait a page"
        f" ({client:.2f} + {serial:.2f} trips), {second:.2f} s a second of a worker at"
        f" {WORKER_PAGES_PER_S} pages/s (target <= {WAIT_TARGET} s) {word}"
    )


# -- 3. row writes per worker -------------------------------------------------------------

WRITES = (
    "SELECT tup_inserted + tup_updated + tup_deleted FROM pg_stat_database"
    " WHERE datname = current_database()"
)
WAL = "SELECT wal_bytes FROM pg_stat_wal"


def node_counters(nodes) -> dict[str, tuple[int, int]]:
    return {n.name: (int(n.execute(WRITES)[0][0]), int(n.execute(WAL)[0][0])) for n in nodes}


def settled_counters(nodes) -> dict[str, tuple[int, int]]:
    """The nodes' counters once the ended sessions' statistics are in (a backend sends
    them as it exits): read until two reads a second apart agree, at most 15 s."""
    last = node_counters(nodes)
    for _ in range(15):
        time.sleep(1.0)
        now = node_counters(nodes)
        if now == last:
            break
        last = now
    return last


def sustain_worker(url: str, tag: str, seconds: float, barrier, results) -> None:
    sys.path.insert(0, str(PROJECT_ROOT))
    from crawler.db.server.engine import get_engine

    engine = get_engine(url)
    worker = work.Worker(engine, f"sustain-{tag}", work.Pages(LOADED_ROOTS, tag))
    worker.crawl(HEADLINE_BATCH)  # connected, warm
    barrier.wait()
    began, done = time.perf_counter(), 0
    while time.perf_counter() - began < seconds:
        done += worker.crawl(HEADLINE_BATCH)
    results.put(done)
    engine.dispose()


def sustain(mode: str, url: str, nodes) -> None:
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(SUSTAIN_PROCESSES + 1, timeout=ROUND_TIMEOUT), ctx.Queue()
    tag = mode.replace(" ", "-")
    procs = [
        ctx.Process(
            target=sustain_worker, args=(url, f"{tag}-{i}", SUSTAIN_SECONDS, barrier, results)
        )
        for i in range(SUSTAIN_PROCESSES)
    ]
    for p in procs:
        p.start()
    barrier.wait()
    before, began = node_counters(nodes), time.perf_counter()
    cpu_before = {node.name: cpu_seconds(node) for node in nodes}
    pages = sum(results.get(timeout=ROUND_TIMEOUT) for _ in procs)
    elapsed = time.perf_counter() - began
    cpu = {node.name: cpu_seconds(node) - cpu_before[node.name] for node in nodes}
    for p in procs:
        p.join(timeout=60)
    after = settled_counters(nodes)
    print(
        f"# {mode}: {SUSTAIN_PROCESSES} processes, {pages:,} pages in {elapsed:.1f} s"
        f" ({pages / elapsed:,.0f} pages/s, finish batches of {HEADLINE_BATCH})"
    )
    for node in nodes:
        rows = after[node.name][0] - before[node.name][0]
        wal = after[node.name][1] - before[node.name][1]
        spent = cpu[node.name]
        role = "worker" if node.name.startswith("worker") else mode
        line = (
            f"{mode}, {node.name}: {rows / elapsed:,.0f} row writes/s, {rows / pages:.2f} a page;"
            f" WAL {wal / elapsed / 1e6:.2f} MB/s, {wal / pages / 1e3:.1f} kB a page;"
            f" CPU {spent / elapsed:.2f} cores, {spent / pages * 1e3:.2f} ms a page"
        )
        if role == "worker" and mode == "cluster":
            word = verdict(
                judged(rows / elapsed >= WRITES_TARGET),
                f"row writes/s per Citus worker ({node.name})",
                f"{rows / elapsed:,.0f}",
                f">= {WRITES_TARGET:,}",
            )
            line += f" (target >= {WRITES_TARGET:,}) {word}"
        print(line)


# -- 1. bytes per host, and the whole run ----------------------------------------------------


def judge_sizes(engines, nodes) -> None:
    tables = per_root_tables(engines["cluster"])
    sizes = {mode: bytes_per_host(engines[mode], tables, mode == "cluster") for mode in MODES}
    for mode, (_, rows, hosts) in sizes.items():
        each = ", ".join(f"{t} {heap:.0f}+{idx:.0f}" for t, heap, idx in rows)
        print(f"# {mode}: {hosts:,} hosts; bytes a host, table+indexes: {each}")
    for mode in MODES:
        each = ", ".join(
            f"{name} {size:.0f}" for name, size in index_bytes(nodes[mode], tables, sizes[mode][2])
        )
        print(f"# {mode}: each index's bytes a host: {each}")
    base, per_host = sizes["one server"][0], sizes["cluster"][0]
    print(f"one server: {base:.0f} B a host, every per-root table and index (baseline)")
    ratio = per_host / base
    word = verdict(
        judged(ratio <= SIZE_TARGET),
        "bytes a host, cluster",
        f"{per_host:.0f} B (x{ratio:.2f})",
        f"<= x{SIZE_TARGET} one server",
    )
    print(
        f"cluster: {per_host:.0f} B a host, the shards summed (ratio vs one server:"
        f" {ratio:.2f}, target <= {SIZE_TARGET}) {word}"
    )


def main() -> None:
    print(machine_line())
    started = time.perf_counter()
    cluster = start_cluster(SHARDS)
    one = start_one_server(len(cluster.nodes))
    urls = {"one server": one.url, "cluster": cluster.url}
    nodes = {"one server": one.nodes, "cluster": cluster.nodes}
    engines = {mode: create_engine(url, pool_size=2) for mode, url in urls.items()}
    hosts = LOADED_ROOTS * (SUBS_PER_ROOT + 1)
    for mode in MODES:
        took = load(engines[mode], (0, LOADED_ROOTS), (0, LOADED_ROOTS // 2), entries=False)
        vacuum_everywhere(engines[mode], nodes[mode])
        print(f"# {mode}: loaded {hosts:,} hosts over {LOADED_ROOTS:,} roots: {took}")
    shards = cluster.coordinator.execute(
        "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'hosts'::regclass"
    )[0][0]
    print(
        f"# {time.perf_counter() - started:.0f} s: both deployments up and loaded;"
        f" the cluster's tables in {shards} shards each"
    )
    judge_sizes(engines, nodes)

    found = {}
    for mode in MODES:
        make_every_host_due(engines[mode])
        found[mode] = count_pages(urls[mode], mode)
        report_trips(mode, found[mode])
    judge_trips(found)

    for mode in MODES:
        make_every_host_due(engines[mode])
        sustain(mode, urls[mode], nodes[mode])
    for engine in engines.values():
        engine.dispose()
    print(f"# {time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
