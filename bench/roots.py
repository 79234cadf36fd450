"""Response times of /roots and a root's page under gunicorn, against /healthz through the
same stack, with 1,000,000 hosts over 200,000 roots.

Target: p95 < 100 ms for /roots (first page by most hosts, sorted nearest a block, a
deep keyset page by name, a prefix search, wildcard zones only) and for a root's page
(the biggest root, 100,000 subdomains, and a small one).

A throwaway embedded Postgres (deleted at exit) is migrated, then bulk-loaded with
COPY as bench/panel.py does (hosts rows, the non-key indexes dropped
during the load and re-created): 200,000 registered domains with 1 + about 3.5
subdomains each, and one wildcard farm of 100,000; the roots table is then filled by
crawler.db.crawl.rollups from the same rows, as any writer of ours fills it. Then trap
windows for 5,000 roots (45 of 50 failed for 500 of them), wildcard probes for
2,000 roots (the farm and 199 others resolve) and this hour's budget counters
for 20,000 roots.

The panel runs as `gunicorn --workers 2 webpanel:create_app()`; a client process
(http.client, CONCURRENCY threads, logged in) warms every URL up, then times
REQUESTS requests per URL in ROUNDS interleaved rounds. Baseline: /healthz.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import psycopg
from _common import machine_line, registered_domain, start_database, verdict
from _panel_http import (
    CONCURRENCY,
    PASSWORD,
    WARMUP,
    WORKERS,
    client,
    free_port,
    p95,
    start_gunicorn,
    stop,
)
from _root_counters import keep_root_counters
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from crawler.core import config
from crawler.db.models import Host
from crawler.db.operators import accounts
from webpanel.queries import paging, root_rows

ROOTS = 200_000
HOSTS = 1_000_000
FARM_HOSTS = 100_000
WINDOWS = 5_000
NEAR_BLOCK = 500
PROBES = 2_000
WILDCARDS = 200
BUDGETED = 20_000
TRAP_WINDOW = config.setting("TRAP_WINDOW").default  # the window /roots/<root> shows, as deployed
REQUESTS = 200
ROUNDS = 10
TARGET_MS = 100.0
LABELS = ("www", "m", "api", "cdn", "blog", "shop", "mail", "docs", "img", "app")


def generate(rng: random.Random) -> tuple[list[str], dict[str, str], str]:
    """(roots, {hostname: root}, the farm root)."""
    roots: set[str] = set()
    while len(roots) < ROOTS:
        roots.add(registered_domain(rng))
    ordered = sorted(roots)
    farm = ordered[len(ordered) // 2]
    hosts = {r: r for r in ordered}
    hosts.update({f"f{i:06x}.{farm}": farm for i in range(FARM_HOSTS - 1)})
    while len(hosts) < HOSTS:
        domain = rng.choice(ordered)
        label = f"{rng.choice(LABELS)}{rng.randint(0, 999)}"
        hosts.setdefault(f"{label}.{domain}", domain)
    return ordered, hosts, farm


def copy_rows(cur, sql: str, rows) -> None:
    with cur.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def load(url: str, rng: random.Random) -> tuple[list[str], str]:
    """Bulk-load the hosts and the per-root data; (roots, the farm root)."""
    started = time.perf_counter()
    roots, hosts, farm = generate(rng)
    engine = create_engine(url)
    with engine.begin() as conn:
        dropped = list(Host.__table__.indexes)
        for ix in dropped:
            ix.drop(conn)
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    now = datetime.now(UTC)
    with psycopg.connect(conninfo) as pg, pg.cursor() as cur:
        cur.execute("SET synchronous_commit = off")
        host_rows = []
        for name, root in hosts.items():
            crawled = rng.random() < 0.6
            at = now - timedelta(seconds=rng.uniform(0, 7 * 86400))
            outcome = rng.choice(("OK", "OK", "OK", "DNS_NXDOMAIN")) if crawled else None
            due = at + timedelta(days=7) if crawled else at
            host_rows.append((name, root, at, outcome, at if crawled else None, due))
        columns = "hostname, root, discovered_at, outcome, last_crawled_at, next_claim_at"
        copy_rows(cur, f"COPY hosts ({columns}) FROM STDIN", host_rows)
        windowed = rng.sample(roots, WINDOWS)
        window_rows = []
        for i, root in enumerate(windowed):
            failed = 45 if i < NEAR_BLOCK else rng.randint(0, 30)
            for j in range(50):
                outcome = "DNS_NXDOMAIN" if j < failed else "OK"
                seen = now - timedelta(seconds=j)
                window_rows.append((root, f"w{j}.{root}", outcome, seen))
        columns = "root, hostname, outcome, seen_at"
        copy_rows(cur, f"COPY trap_window ({columns}) FROM STDIN", window_rows)
        probed = [farm, *rng.sample(roots, PROBES - 1)]
        copy_rows(
            cur,
            "COPY wildcard_probes (root, probe, outcome) FROM STDIN",
            (
                (r, f"hc-0123456789ab.{r}", "DNS_ALIVE" if i < WILDCARDS else "DNS_NXDOMAIN")
                for i, r in enumerate(probed)
            ),
        )
        minute = now.replace(second=0, microsecond=0)
        copy_rows(
            cur,
            "COPY root_claims (root, minute, claimed) FROM STDIN",
            ((r, minute, rng.randint(1, 50)) for r in rng.sample(roots, BUDGETED)),
        )
        pg.commit()
    loaded = time.perf_counter() - started
    with engine.begin() as conn:
        conn.execute(text("SET maintenance_work_mem = '256MB'"))
        for ix in dropped:
            ix.create(conn)
        keep_root_counters(
            conn,
            hosts=[(r, o) for _, r, _, o, _, _ in host_rows],
            dated=[(r, due) for _, r, *_, due in host_rows],
            windows=windowed,
        )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
        known = conn.execute(text("SELECT count(*), sum(hosts) FROM roots")).one()
    engine.dispose()
    print(
        f"# loaded {len(hosts):,} hosts over {known[0]:,} roots (roots table: {known[1]:,} hosts),"
        f" the farm {farm} with {FARM_HOSTS:,}; {len(window_rows):,} trap-window rows,"
        f" {PROBES:,} probes: COPY {loaded:.0f} s, indexes + VACUUM ANALYZE"
        f" {time.perf_counter() - started - loaded:.0f} s"
    )
    return roots, farm


def query_times(engine, farm: str, small: str, deep: str) -> list[str]:
    """p95 of the pages' database work alone (the page functions, in this process)."""
    calls = {
        "/roots first page": lambda c: root_rows.root_page(c, root_rows.RootFilter()),
        "/roots nearest a block": lambda c: root_rows.root_page(
            c, root_rows.RootFilter(sort="near_block")
        ),
        "/roots deep keyset page": lambda c: root_rows.root_page(
            c, root_rows.RootFilter(sort="name"), after=deep
        ),
        "/roots wildcard zones": lambda c: root_rows.root_page(
            c, root_rows.RootFilter(wildcards=True)
        ),
    }
    for name in (farm, small):
        calls[f"/roots/{name}"] = lambda c, name=name: (
            root_rows.root_line(c, name),
            root_rows.subdomain_page(c, name),
            root_rows.window(c, name, TRAP_WINDOW),
        )
    lines = []
    for label, call in calls.items():
        spent = []
        for _ in range(40):
            with engine.connect() as conn:
                start = time.perf_counter()
                call(conn)
                spent.append(time.perf_counter() - start)
        lines.append(f"# database work alone, {label}: p95 {p95(spent[10:]) * 1000:.1f} ms")
    return lines


def explain(engine, label: str, roots: list[str]) -> None:
    """EXPLAIN ANALYZE of the /roots first page (the statement of a slow page)."""
    stmt = paging.keyset(
        root_rows._roots(root_rows.RootFilter()), root_rows.ROOT_SORTS["hosts"], None, None, 50
    )[0]
    with engine.connect() as conn:
        compiled = stmt.compile(dialect=conn.dialect)
        print(f"# EXPLAIN ANALYZE, the roots page query ({label} was slow):")
        for (line,) in conn.exec_driver_sql("EXPLAIN ANALYZE " + str(compiled), compiled.params):
            print("#   " + line)


def main() -> None:
    print(machine_line())
    started = time.perf_counter()
    rng = random.Random(20261201)
    url = start_database("hostcrawl-bench-roots-")
    roots, farm = load(url, rng)
    engine = create_engine(url)
    accounts.create_user(engine, "bench", PASSWORD)
    deep = paging.encode_cursor([roots[int(len(roots) * 0.9)]])
    small = roots[len(roots) // 3]
    pages = [
        ("/healthz (baseline)", "/healthz", False),
        ("/roots first page", "/roots", True),
        ("/roots nearest a block", "/roots?sort=near_block", True),
        ("/roots deep keyset page", "/roots?" + urlencode({"sort": "name", "after": deep}), True),
        ("/roots prefix search", "/roots?q=shop", True),
        ("/roots wildcard zones", "/roots?wildcards=1", True),
        (f"/roots/{farm} (100k hosts)", f"/roots/{farm}", True),
        ("/roots/<small root>", f"/roots/{small}", True),
    ]
    port = free_port()
    proc = start_gunicorn(url, port)
    results = mp.get_context("spawn").Queue()
    load_tool = mp.get_context("spawn").Process(
        target=client, args=(port, pages, results, REQUESTS, ROUNDS)
    )
    load_tool.start()
    times = results.get(timeout=900)
    load_tool.join(timeout=30)
    stop(proc)
    print(
        f"# gunicorn {WORKERS} workers; a client process with {CONCURRENCY} threads,"
        f" {WARMUP} warm-up + {REQUESTS} timed requests per URL in {ROUNDS} interleaved rounds,"
        f" logged in; machine load average {os.getloadavg()[0]:.1f}"
    )
    base_p95 = p95(times[pages[0][0]]) * 1000
    print(f"/healthz (baseline): p95 {base_p95:.1f} ms")
    slow = []
    for label, _, _ in pages[1:]:
        values = times[label]
        page_p95 = p95(values) * 1000
        ok = page_p95 < TARGET_MS
        print(
            f"{label}: median {statistics.median(values) * 1000:.1f} ms, p95 {page_p95:.1f} ms"
            f" (target p95 < {TARGET_MS:.0f} ms)"
            f" {verdict(ok, f'{label} p95', f'{page_p95:.1f} ms', f'< {TARGET_MS:.0f} ms')};"
            f" ratio p95 vs /healthz p95: {page_p95 / base_p95:.1f}"
        )
        if not ok:
            slow.append(label)
    print("\n".join(query_times(engine, farm, small, deep)))
    if slow or "--explain" in sys.argv:
        explain(engine, ", ".join(slow) or "--explain", roots)
    engine.dispose()
    print(f"# total run time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
