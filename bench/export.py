"""Exports and the panel's host list on a Citus cluster against one server, right after a
bulk import with stale statistics (issue 42, items 2 and 3).

Both deployments run in this session with the same room (bench/_citus_nodes.py: the same
PostgreSQL 16 binaries, the one server with as much shared_buffers as the cluster's
three nodes together), migrated by `upgrade_to_head()`. On each, the recipe of a new
user's bulk import:

1. HOSTS hosts over HOSTS / 15 registered domains queued in bulk (crawler.db.operators.bulk.seed,
   what `hostcrawl seed --file` runs), then ANALYZE, then autovacuum switched off on
   hosts: nothing refreshes their statistics behind the next step's back.
2. A no_follow list of HOSTS x 0.34 lines through the bulk writer (what `hostcrawl
   no-follow add --file` runs): a tenth of the domains that have hosts, the rest names
   of no host. At 300,000 hosts: 20,000 domains, 102,000 lines, 2,000 of them domains
   with hosts (30,000 hosts hidden).
3. At once, each figure the best of its repeats, one server and the cluster in turn:
   - `hostcrawl hosts export --format jsonl` (crawler.db.operators.export.jsonl_lines) and the
     panel's CSV download (csv_chunks), every shown host;
   - the panel's host list, `/`'s own query (webpanel.queries.host_rows.host_page): the
     first page, a filtered page (never crawled, newest first) and a deep page (a cursor
     half-way down the list).

Each figure is printed for both, with the ratio cluster / one server. The exports'
target: <= 1.5. The pages' target is absolute (issue 53: Citus adds its few milliseconds
a statement, so a ratio to a one-server page of 2.5 ms says little): the cluster's p95
under 50 ms at 300,000 hosts or fewer, under 100 ms above (10M); their ratio is printed
beside it.

--hosts N: another scale (--hosts 30000: a quick run, about a tenth of the time).
--explain: each query's plan on both (through Citus: the plan of one task on its worker),
and the statistics of the cluster's shards (what each shard's planner believes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))
os.environ["LOCAL_SUFFIXES"] = "test"  # d7.test is a registered domain, as in the tests

from _citus_nodes import start_cluster, start_one_server  # noqa: E402
from _common import machine_line, verdict  # noqa: E402
from _growth_timing import p95  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.dialects import postgresql  # noqa: E402

from crawler.db.deployments import deployment_of  # noqa: E402
from crawler.db.operators import bulk, export  # noqa: E402
from crawler.db.operators.host_filter import NEVER_CRAWLED, HostFilter  # noqa: E402
from crawler.db.rules import deny_entries  # noqa: E402
from webpanel.queries import host_rows, paging  # noqa: E402

MODES = ("one server", "cluster")
TARGET_RATIO = 1.5
PAGE_P95_MS = ((300_000, 50.0), (10_000_000, 100.0))  # up to so many hosts: the cluster's p95
HOSTS_PER_DOMAIN = 15
LINES_PER_HOST = 0.34
COVERED_SHARE = 0.1  # of the domains with hosts, the share the list names
EXPORT_REPEATS = 2
PAGE_REPEATS = 20  # a page takes milliseconds: the best of many, on a busy machine
NEVER_NEWEST = HostFilter(outcome=NEVER_CRAWLED, sort="newest")


def hostnames(hosts: int) -> list[str]:
    """`hosts` names over hosts / HOSTS_PER_DOMAIN domains, round robin over them."""
    domains = hosts // HOSTS_PER_DOMAIN
    return [f"h{i // domains}.d{i % domains}.test" for i in range(hosts)]


def no_follow_lines(hosts: int) -> list[str]:
    """The no_follow list: its first lines domains that have hosts, then names of none."""
    domains = hosts // HOSTS_PER_DOMAIN
    covered = int(domains * COVERED_SHARE)
    lines = int(hosts * LINES_PER_HOST)
    return [f"d{i}.test" for i in range(covered)] + [
        f"x{i}.nohost{i}.test" for i in range(lines - covered)
    ]


def bulk_import(engine, hosts: int) -> str:
    """The recipe's steps 1 and 2 on one deployment; what each took."""
    started = time.perf_counter()
    for _ in bulk.seed(engine, hostnames(hosts)):
        pass
    seeded = time.perf_counter() - started
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE"))
        conn.execute(text("ALTER TABLE hosts SET (autovacuum_enabled = off)"))
    started = time.perf_counter()
    lines = no_follow_lines(hosts)
    for _ in deny_entries.add_no_follow_batches(engine, lines):
        pass
    listed = time.perf_counter() - started
    return (
        f"seeded {hosts:,} hosts in {seeded:.1f} s,"
        f" {len(lines):,} no_follow lines in {listed:.1f} s"
    )


def export_jsonl(engine) -> int:
    return sum(1 for _ in export.jsonl_lines(engine, HostFilter()))


def export_csv(engine) -> int:
    """The panel's CSV download: its lines (its bytes differ with the dates' digits)."""
    return sum(chunk.count(b"\n") for chunk in export.csv_chunks(engine, HostFilter()))


def page_of(flt: HostFilter, after: str | None = None) -> Callable:
    """One page of `/` for `flt`, as the panel runs it: in a transaction of its own."""

    def run(engine) -> int:
        with engine.begin() as conn:
            return len(host_rows.host_page(conn, flt, after=after).rows)

    return run


def figures(hosts: int) -> dict[str, Callable]:
    """What is timed: {figure: run(engine) -> what it gave (lines or rows)}."""
    deep = paging.encode_cursor([sorted(hostnames(hosts))[hosts // 2]])
    return {
        "export jsonl": export_jsonl,
        "export csv": export_csv,
        "/ first page": page_of(HostFilter()),
        "/ never crawled, newest first": page_of(NEVER_NEWEST),
        "/ deep page": page_of(HostFilter(), after=deep),
    }


def timed(run: Callable, engine) -> tuple[float, int]:
    """How long one run took, and what it gave."""
    started = time.perf_counter()
    gave = run(engine)
    return time.perf_counter() - started, gave


def compare(name: str, run: Callable, engines: dict, repeats: int, hosts: int) -> None:
    """One figure on both deployments, taken in turn `repeats` times, the best of each;
    its ratio and verdict."""
    scale = f"{hosts:,} hosts"
    best: dict[str, list[float]] = {mode: [] for mode in MODES}
    gave = {}
    for _ in range(repeats):
        for mode in MODES:
            took, gave[mode] = timed(run, engines[mode])
            best[mode].append(took)
    one, on_cluster = min(best["one server"]), min(best["cluster"])
    ratio = on_cluster / one
    same = "" if gave["one server"] == gave["cluster"] else f" (gave {gave}: NOT THE SAME)"
    if name.startswith("/"):
        judge_page(name, best["cluster"], hosts, f"ratio {ratio:.2f}{same}", not same)
        return
    word = verdict(
        ratio <= TARGET_RATIO and not same,
        f"{name} after a bulk import, cluster vs one server ({scale})",
        f"x{ratio:.2f}",
        f"<= x{TARGET_RATIO}",
    )
    print(
        f"{name}: one server {seconds(one)}, cluster {seconds(on_cluster)}"
        f" (ratio {ratio:.2f}, target <= {TARGET_RATIO}) {word}{same}"
    )


def page_target_ms(hosts: int) -> float | None:
    """The cluster's p95 target for a page at `hosts` hosts (None: past the last scale)."""
    return next((ms for most, ms in PAGE_P95_MS if hosts <= most), None)


def judge_page(name: str, cluster_times: list[float], hosts: int, beside: str, same: bool):
    """A page's verdict: the p95 of its repeats on the cluster against the absolute target."""
    took = p95(cluster_times) * 1000
    target = page_target_ms(hosts)
    ok = None if target is None else took < target and same
    figure = f"{name} p95 on the cluster after a bulk import ({hosts:,} hosts)"
    word = verdict(ok, figure, f"{took:.1f} ms", f"< {target:.0f} ms" if target else "")
    best = min(cluster_times) * 1000
    print(
        f"{name}: cluster p95 {took:.1f} ms, best {best:.1f} ms (target < {target} ms;"
        f" {beside}) {word}"
    )


def seconds(value: float) -> str:
    return f"{value:.2f} s" if value >= 1 else f"{value * 1000:.1f} ms"


def explain(engines: dict, hosts: int) -> None:
    """Each query's plan on both deployments (Citus shows one task's plan on its worker)."""
    deep = paging.encode_cursor([sorted(hostnames(hosts))[hosts // 2]])
    for mode, engine in engines.items():
        with engine.connect() as conn:
            found = deployment_of(conn)
        statements = {
            "export": export.export_statement(HostFilter(), found),
            "/ first page": host_rows.host_statement(HostFilter(), deployment=found),
            "/ never crawled, newest first": host_rows.host_statement(
                NEVER_NEWEST, deployment=found
            ),
            "/ deep page": host_rows.host_statement(HostFilter(), after=deep, deployment=found),
        }
        for name, statement in statements.items():
            sql = statement.compile(
                dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}
            )
            with engine.connect() as conn:
                plan = conn.execute(text(f"EXPLAIN {sql}")).scalars()
                print(f"# plan of {name} on {mode}:\n#   " + "\n#   ".join(plan))


# Per shard, what its planner believes and what is there: rows estimated, rows live, rows
# changed since its last ANALYZE, and its autovacuum setting (reloptions).
SHARD_STATISTICS = text(
    """
    SELECT result FROM run_command_on_shards(:table, $$
        SELECT concat_ws(' ', c.reltuples::bigint, s.n_live_tup, s.n_mod_since_analyze,
                         coalesce(c.reloptions::text, '{}'))
          FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
         WHERE c.oid = '%s'::regclass$$)
    """
)


def shard_statistics(engine) -> None:
    """The cluster's statistics per shard of hosts, summed up in a line."""
    for table in ("hosts",):
        with engine.connect() as conn:
            shards = [
                r.split(" ", 3) for r in conn.execute(SHARD_STATISTICS, {"table": table}).scalars()
            ]
        believed, live, changed = (sum(int(s[i]) for s in shards) for i in range(3))
        off = sum("autovacuum_enabled=off" in s[3] for s in shards)
        print(
            f"# cluster {table}: {len(shards)} shards, {believed:,} rows by their statistics,"
            f" {live:,} live, {changed:,} changed since ANALYZE, autovacuum off on {off}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=300_000)
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()
    print(machine_line())
    started = time.perf_counter()
    cluster = start_cluster()
    one = start_one_server(len(cluster.nodes))
    urls = {"one server": one.url, "cluster": cluster.url}
    engines = {mode: create_engine(url, pool_size=2) for mode, url in urls.items()}
    for mode in MODES:
        print(f"# {mode}: {bulk_import(engines[mode], args.hosts)}")
    for name, run in figures(args.hosts).items():
        repeats = EXPORT_REPEATS if name.startswith("export") else PAGE_REPEATS
        compare(name, run, engines, repeats, args.hosts)
    if args.explain:
        shard_statistics(engines["cluster"])
        explain(engines, args.hosts)
    for engine in engines.values():
        engine.dispose()
    print(f"# {time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
