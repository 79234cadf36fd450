"""What Citus costs on one machine: the same crawl and the same claims on one Postgres
server and on a one-machine Citus cluster (a coordinator and two workers), side by side.

One machine cannot show what Citus gains (more machines); it shows what it costs: the
coordinator's planning and routing, a network hop per statement, a two-phase commit
where a transaction writes to both workers.

Both deployments run in this session with the same room (bench/_citus_nodes.py: the same
PostgreSQL 16 binaries and settings, the one server without Citus and with as much
shared_buffers as the cluster's three nodes together), the same migrations
(`upgrade_to_head()`, which distributes the per-root tables by root on the cluster) and
the same code measuring them. Each crawl prints the CPU seconds each server spent on it.

1. Single-shard statements: a crawl of bench/crawl.py's world on the cluster (`scrapy
   crawl hosts -s CLOSE_WHEN_DRAINED=1` against fakeweb; claim, finish, trap window,
   deny list), with DATABASE_POOLED=1 (no prepared statements, so each execution is
   planned) and the coordinator counting: citus_stat_counters' single- and multi-shard
   executions, and the statements of its "multi-task query" log lines by text.
   Target: >= 99% single-shard; the multi-shard statements are printed by calls.
2. Balance: 1M hosts over 200,000 roots (bench/_growth_data.py, generate_series) on two
   workers: the rows of roots, hosts and trap_window on each worker. Target:
   max/min <= 1.2 for each.
3. Pages/s of that crawl (no counting), one server then the cluster, interleaved, best
   of 2 each, the tables emptied and the first host seeded before each round. Target:
   the cluster >= 0.7 x one server.
4. Many roots (issue 42, item 4): MANY_ROOTS roots of HOSTS_PER_ROOT hosts each (a root
   and its subdomains), every host seeded, ROOT_CONCURRENCY=1, so the roots due at once
   are spread over every shard group and each gives one host at a time: a claim that
   drew from one group returned a thirty-second of them. Pages/s, one server then the
   cluster, interleaved, best of 2 each. Target: the cluster >= 0.7 x one server.
5. The polite claim at 1M hosts: 4 spawned processes, 25 claims of 100 each
   (bench/_citus_claims.py), every host made due before each round (bench/claims.py's
   reset), interleaved, 3 rounds each; the lowest p95 of each. Target: the cluster's
   <= 1.5 x one server's.

--quick: 600 hosts crawled, 100 roots of many, 100,000 loaded, one round of each:
figures, NO VERDICT.
--keep: keep the crawlers' logs (the folder is printed).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from _citus_claims import BATCH, CALLS, WARMUP, WORKERS, claim_round  # noqa: E402
from _citus_nodes import (  # noqa: E402
    StatementCount,
    cpu_seconds,
    rows_per_worker,
    start_cluster,
    start_one_server,
    vacuum_everywhere,
)
from _common import machine_line, verdict, work_dir  # noqa: E402
from _crawl_runs import empty_tables, run_child, scrapy_args  # noqa: E402
from _growth_data import SUBS_PER_ROOT, load  # noqa: E402
from claims import reset as make_every_host_due  # noqa: E402
from crawl import HOSTS, LINKS, MESSY, ROOTS, SEED  # noqa: E402  the world of crawl.py
from sqlalchemy import create_engine, text  # noqa: E402

QUICK = "--quick" in sys.argv  # trying it out: small sizes, one round, no verdict
CRAWL_ROUNDS, CLAIM_ROUNDS = (1, 1) if QUICK else (2, 3)
LOADED_ROOTS = 20_000 if QUICK else 200_000  # x5 hosts
SINGLE_SHARD_TARGET = 0.99
BALANCE_TARGET = 1.2
PAGES_TARGET = 0.7
CLAIM_P95_TARGET = 1.5
MANY_ROOTS, HOSTS_PER_ROOT = (100, 2) if QUICK else (300, 10)
SHOWN = 12  # multi-shard statements printed, by plans
MODES = ("one server", "cluster")


def judged(ok: bool) -> bool | None:
    return None if QUICK else ok


def crawl_world(work: Path):
    from tests.fakeweb import FakeWeb, World

    world = World(seed=SEED)
    names = world.graph(HOSTS, roots=ROOTS, links_per_page=LINKS, messy=MESSY)
    web = FakeWeb(world, workdir=work / "fakeweb").start()
    print(
        f"# world: bench/crawl.py's, {HOSTS:,} hosts under {len(ROOTS)} roots, {LINKS} links"
        " per page, fakeweb on loopback (https); each crawl starts from 1 seed"
    )
    return names, web


def many_roots_world(work: Path):
    """MANY_ROOTS sites of distinct domains, each with HOSTS_PER_ROOT - 1 subdomains, no
    links: every host is a seed."""
    from tests.fakeweb import FakeWeb, World

    world = World(seed=SEED)
    roots = [f"many{r:04}.test" for r in range(MANY_ROOTS)]
    names = [*roots, *(f"h{i}.{r}" for r in roots for i in range(1, HOSTS_PER_ROOT))]
    for name in names:
        world.site(name, title=f"Page of {name}")
    web = FakeWeb(world, workdir=work / "fakeweb-many").start()
    print(
        f"# world: {MANY_ROOTS} roots of {HOSTS_PER_ROOT} hosts ({len(names):,} hosts, all"
        " seeded), no links, ROOT_CONCURRENCY=1, fakeweb on loopback (https)"
    )
    return names, web


def crawl(engine, url, nodes, args, log: Path, names, counting=None, seeds=1, **env) -> dict:
    """Tables emptied, the first `seeds` hosts seeded, one crawler process to its end; its
    figures, with the CPU seconds each server of the deployment spent meanwhile (and what
    `counting` counted of the crawler's statements, if given)."""
    from crawler.db.crawl import queue

    empty_tables(engine)
    seeded = queue.seed(engine, names[:seeds])
    assert all(change.status != "refused" for change in seeded), seeded
    before = [cpu_seconds(node) for node in nodes]
    if counting:
        counting.start()
    r = run_child(args, log, hosts=len(names), env={**os.environ, "DATABASE_URL": url, **env})
    if counting:
        r["statements"] = counting.stop()
    spent = [cpu_seconds(node) - was for node, was in zip(nodes, before, strict=True)]
    r["db_cpu"] = {node.name: seconds for node, seconds in zip(nodes, spent, strict=True)}
    with engine.connect() as conn:
        r["pages"] = conn.execute(text("SELECT count(*) FROM hosts WHERE outcome = 'OK'")).scalar()
    r["rate"] = r["pages"] / r["elapsed"]
    return r


def cpu_line(r: dict) -> str:
    total = sum(r["db_cpu"].values())
    each = ", ".join(f"{name} {s:.1f}" for name, s in r["db_cpu"].items())
    return f"database CPU {total:.1f} s, {total / max(r['pages'], 1) * 1000:.1f} ms a page" + (
        f" ({each})" if len(r["db_cpu"]) > 1 else ""
    )


def measure_crawls(engines, urls, nodes, names, web, work: Path, cluster) -> None:
    args = scrapy_args(["crawl", "hosts"], web.scrapy_settings("https"), CLOSE_WHEN_DRAINED=1)
    compare_crawls(engines, urls, nodes, names, args, work, "crawl")
    measure_statements(engines["cluster"], cluster, args, names, work)


def measure_many_roots(engines, urls, nodes, work: Path) -> None:
    names, web = many_roots_world(work)
    try:
        settings = web.scrapy_settings("https")
        args = scrapy_args(["crawl", "hosts"], settings, CLOSE_WHEN_DRAINED=1, ROOT_CONCURRENCY=1)
        compare_crawls(engines, urls, nodes, names, args, work, "many roots", seeds=len(names))
    finally:
        web.stop()


def compare_crawls(engines, urls, nodes, names, args, work: Path, what: str, seeds=1) -> None:
    """CRAWL_ROUNDS crawls of `names` on each deployment, interleaved; the best pages/s of
    each, and the cluster's against one server's (PAGES_TARGET)."""
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    for i in range(CRAWL_ROUNDS):
        for mode in MODES:
            log = work / f"{what.replace(' ', '-')}-{mode.replace(' ', '-')}-{i}.log"
            r = crawl(engines[mode], urls[mode], nodes[mode], args, log, names, seeds=seeds)
            rates[mode].append(r["rate"])
            print(
                f"# round {what}, {mode}: {r['pages']:,} pages in {r['elapsed']:.2f} s spider"
                f" open->close (process {r['wall']:.1f} s, crawler CPU {r['cpu']:.1f} s;"
                f" {cpu_line(r)})"
            )
            if r["pages"] != len(names):
                print(f"# WARNING: {mode} crawled {r['pages']} pages of {len(names)}")
    best = {mode: max(rs) for mode, rs in rates.items()}
    ratio = best["cluster"] / best["one server"]
    print(
        f"{what}, one server: {best['one server']:,.0f} pages/s"
        f" [median {statistics.median(rates['one server']):,.0f}] (baseline)"
    )
    word = verdict(
        judged(ratio >= PAGES_TARGET),
        f"{what} pages/s vs one server",
        f"x{ratio:.2f}",
        f">= x{PAGES_TARGET}",
    )
    print(
        f"{what}, cluster: {best['cluster']:,.0f} pages/s"
        f" [median {statistics.median(rates['cluster']):,.0f}]"
        f" (ratio vs one server: {ratio:.2f}, target >= {PAGES_TARGET}) {word}"
    )


def measure_statements(engine, cluster, args, names, work: Path) -> None:
    """One more crawl on the cluster, the coordinator counting its statements."""
    counting = StatementCount(cluster)
    log = work / "counted.log"
    r = crawl(engine, cluster.url, cluster.nodes, args, log, names, counting, DATABASE_POOLED="1")
    single, multi, texts = r["statements"]
    share = single / max(single + multi, 1)
    print(
        f"# counted crawl on the cluster: {r['pages']:,} pages; Citus ran {single:,}"
        f" single-shard and {multi:,} multi-shard statements (its log names"
        f" the statements of {sum(texts.values()):,} multi-task plans, {len(texts)} kinds,"
        " by plans:)"
    )
    for statement, calls in texts.most_common(SHOWN):
        print(f"#   {calls:>6,} x {statement[:220]}")
    if multi > sum(texts.values()):
        print(
            f"#   {multi - sum(texts.values()):>6,} not in the log: INSERT ... SELECT FROM"
            " unnest(...) whose rows Citus sent to several shards (it decides that when it"
            " runs them, so they are never planned as multi-task)"
        )
    word = verdict(
        judged(share >= SINGLE_SHARD_TARGET),
        "statements on one shard",
        f"{share:.2%}",
        f">= {SINGLE_SHARD_TARGET:.0%}",
    )
    print(
        f"the crawl's statements Citus ran on a single shard: {share:.2%}"
        f" (target >= {SINGLE_SHARD_TARGET:.0%}) {word}"
    )


def measure_balance(cluster) -> None:
    worst = 0.0
    for table, rows in rows_per_worker(cluster).items():
        ratio = max(rows) / max(min(rows), 1)
        worst = max(worst, ratio)
        print(f"# {table}: {' / '.join(f'{n:,}' for n in rows)} rows per worker ({ratio:.3f})")
    word = verdict(
        judged(worst <= BALANCE_TARGET),
        "rows per worker max/min",
        f"{worst:.3f}",
        f"<= {BALANCE_TARGET}",
    )
    print(
        f"rows per worker at {LOADED_ROOTS * (SUBS_PER_ROOT + 1):,} hosts over"
        f" {LOADED_ROOTS:,} roots, worst table's max/min: {worst:.3f}"
        f" (target <= {BALANCE_TARGET}) {word}"
    )


def measure_claims(engines, urls) -> None:
    rounds: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for i in range(CLAIM_ROUNDS):
        for mode in MODES:
            make_every_host_due(engines[mode])
            r = claim_round(urls[mode], f"{mode.replace(' ', '-')}-{i}")
            rounds[mode].append(r)
            print(
                f"# round {mode}: {r['claimed']:,} claimed, p50 {r['p50'] * 1000:.1f} ms,"
                f" p95 {r['p95'] * 1000:.1f} ms"
            )
    best = {mode: min(r["p95"] for r in rs) * 1000 for mode, rs in rounds.items()}
    median = {mode: statistics.median(r["p95"] for r in rs) * 1000 for mode, rs in rounds.items()}
    ratio = best["cluster"] / best["one server"]
    hosts = f"{LOADED_ROOTS * (SUBS_PER_ROOT + 1):,} hosts"
    print(
        f"one server: claim p95 {best['one server']:.1f} ms [median {median['one server']:.1f}]"
        f" at {hosts} (baseline)"
    )
    word = verdict(
        judged(ratio <= CLAIM_P95_TARGET),
        "claim p95 vs one server",
        f"x{ratio:.2f}",
        f"<= x{CLAIM_P95_TARGET}",
    )
    print(
        f"cluster: claim p95 {best['cluster']:.1f} ms [median {median['cluster']:.1f}]"
        f" (ratio vs one server: {ratio:.2f}, target <= {CLAIM_P95_TARGET}) {word}"
    )


def main() -> None:
    os.environ["LOCAL_SUFFIXES"] = "test"  # fakeweb's names, for the seeds and the crawlers
    print(machine_line())
    started = time.perf_counter()
    work = work_dir("citus")
    cluster = start_cluster()
    one = start_one_server(len(cluster.nodes))
    urls = {"one server": one.url, "cluster": cluster.url}
    nodes = {"one server": one.nodes, "cluster": cluster.nodes}
    engines = {mode: create_engine(url, pool_size=2) for mode, url in urls.items()}
    print(f"# {time.perf_counter() - started:.0f} s: both deployments up")

    names, web = crawl_world(work)
    try:
        measure_crawls(engines, urls, nodes, names, web, work, cluster)
    finally:
        web.stop()
    measure_many_roots(engines, urls, nodes, work)

    hosts = LOADED_ROOTS * (SUBS_PER_ROOT + 1)
    for mode in MODES:
        empty_tables(engines[mode])
        took = load(engines[mode], (0, LOADED_ROOTS), (0, LOADED_ROOTS // 2), entries=True)
        vacuum_everywhere(engines[mode], nodes[mode])
        print(f"# {mode}: loaded {hosts:,} hosts over {LOADED_ROOTS:,} roots: {took}")
    measure_balance(cluster)
    print(
        f"# claims: {WORKERS} spawned processes, {CALLS} claims of {BATCH} each per round,"
        f" after {WARMUP} untimed"
    )
    measure_claims(engines, urls)

    for engine in engines.values():
        engine.dispose()
    print(f"# {time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
