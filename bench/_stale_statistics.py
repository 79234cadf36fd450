"""bench/bulk.py's stale-statistics run: the export and the main list right after a big
block list, before anything has analyzed the tables, against the same with fresh
statistics (the baseline, on the same data, in the same session).

Autovacuum is off on the tables. The hosts are queued with `seed` (whose own ANALYZE
leaves statistics of 300,000 hosts and no entries); the block list is then added with
the bulk write's ANALYZE switched off, so the planner still believes what it saw before
the import. Each figure is the best of REPEATS runs (warm cache for both sides).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from unittest import mock

from _common import registered_domain, subdomain_of, verdict
from sqlalchemy import create_engine, text

from crawler.core.blocklists import read_lines
from crawler.db.operators import bulk, export
from crawler.db.operators.host_filter import HostFilter
from crawler.db.rules import deny_entries
from crawler.db.server import statistics
from webpanel.queries import dashboard, host_rows

TABLES = ("hosts", "roots")
TARGET_RATIO = 1.5
REPEATS = 2
TIMEOUT_MS = 600_000  # a plan that compares every host with every entry ends as a FAIL
COVERED_SHARE = 0.05  # block-list names that are roots of queued hosts


def best_of(run: Callable[[], object]) -> float:
    took = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        took.append(time.perf_counter() - start)
    return min(took)


def export_all(engine) -> int:
    """`hosts export --format jsonl` of every host, in process: the lines written. The
    export reads through a cursor, a statement a fetch, so statement_timeout never ends
    it: a bad plan once took a minute a fetch, and this bounds the whole export."""
    started, lines = time.perf_counter(), 0
    for _ in export.jsonl_lines(engine, HostFilter()):
        lines += 1
        if lines % 1000 == 0 and time.perf_counter() - started > TIMEOUT_MS / 1000:
            raise TimeoutError(f"the export wrote {lines:,} lines in {TIMEOUT_MS // 1000} s")
    return lines


def main_list(engine) -> int:
    """The main list's first page: by name, never crawled, and newest first (a seed's batch
    shares one discovery time: that page reads the whole batch to order it by name)."""
    shown = 0
    with engine.begin() as conn:
        for flt in (
            HostFilter(),
            HostFilter(sort="newest"),
            HostFilter(outcome="none"),
        ):
            shown += len(host_rows.host_page(conn, flt).rows)
    return shown


def dashboard_figures(engine) -> int:
    """The strip and charts above the list (computed once per PANEL_STATS_TTL): hosts."""
    with engine.connect() as conn:
        return dashboard.dashboard(conn).hosts_known


def load(engine, hosts: int, block_list: int, rng: random.Random) -> None:
    """Queue `hosts` names (analyzed by the seed), then add a `block_list`-line hosts file
    with the bulk write's ANALYZE off: the statistics predate the entries."""
    names = [subdomain_of(registered_domain(rng), rng, rng.randint(0, 2)) for _ in range(hosts)]
    bulk.collect(bulk.seed(engine, names))
    roots = sorted({n.split(".", 1)[-1] if n.count(".") > 1 else n for n in names})
    covered = rng.sample(roots, int(block_list * COVERED_SHARE))
    fresh = [subdomain_of(registered_domain(rng), rng, 1) for _ in range(block_list)]
    lines = [f"0.0.0.0 {name}" for name in (covered + fresh)[:block_list]]
    items = ((item.value, item.note) for item in read_lines(lines))
    with mock.patch.object(statistics, "analyze_after_bulk_write", lambda *a, **k: []):
        deny_entries.add_no_follow(engine, items)


def run(url: str, hosts: int, block_list: int, on: str = "") -> bool:
    """Prints the figures and the PASS/FAIL line; True on PASS. `on`: the deployment, in
    the figure's name ("": one server, the figure's first name)."""
    label = f"stale statistics{on and ', ' + on}"
    engine = create_engine(url, connect_args={"options": f"-c statement_timeout={TIMEOUT_MS}"})
    with engine.begin() as conn:
        for table in TABLES:
            conn.execute(text(f"ALTER TABLE {table} SET (autovacuum_enabled = false)"))
    load(engine, hosts, block_list, random.Random(23))
    with engine.connect() as conn:
        believed = statistics.believed_rows(conn, "hosts")
    figures = {}
    for state in ("stale", "fresh"):
        if state == "fresh":
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f"ANALYZE {', '.join(TABLES)}"))
        try:
            figures[state] = (
                best_of(lambda: export_all(engine)),
                best_of(lambda: main_list(engine)),
            )
            strip = best_of(lambda: dashboard_figures(engine))
            print(f"# {label}, {state}: the dashboard's figures in {strip:.2f} s")
        except Exception as exc:  # the statement timeout: the plan this bench guards against
            print(f"# {label}, {state}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            figures[state] = (float("inf"), float("inf"))
    (stale_export, stale_list), (fresh_export, fresh_list) = figures["stale"], figures["fresh"]
    exported = export_all(engine)
    ok = stale_export <= TARGET_RATIO * fresh_export and stale_list <= TARGET_RATIO * fresh_list
    print(
        f"# {label}: the planner believed {believed:,.0f} hosts rows before a"
        f" {block_list:,}-line block list over {hosts:,} queued hosts (autovacuum off)"
    )
    word = verdict(
        ok,
        label,
        f"x{max(stale_export / fresh_export, stale_list / fresh_list):.2f}",
        f"<= x{TARGET_RATIO}",
    )
    print(
        f"{label}: export {stale_export:.2f} s vs {fresh_export:.2f} s fresh"
        f" ({stale_export / fresh_export:.2f}x, {exported:,} rows); main list"
        f" {stale_list * 1000:.0f} ms vs {fresh_list * 1000:.0f} ms fresh"
        f" ({stale_list / fresh_list:.2f}x); target <= {TARGET_RATIO}x each: {word}"
    )
    engine.dispose()
    return ok
