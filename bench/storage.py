"""Bytes per host: what each table and index of the schema at head costs a host.

One throwaway embedded Postgres (deleted at exit), migrated to head. HOSTS names over
ROOTS registered domains (the shape of issue 50's measurement: 1,000,000 names over
200,000 domains; fixed seed, bench/_common.py's names) are COPYed in a shuffled order
into the tables as they are, indexes in place, so every B-tree grows page split by page
split as a crawl grows it (a CREATE INDEX after the load would pack them tighter than a
database that lived ever does). Foreign keys are not checked during the load
(session_replication_role = replica, as bench/_growth_data.py loads). Two variants, each
on emptied tables:

- **seeded**: what `hostcrawl seed` writes: hosts (name, root, date, due at once; one row
  a host, the queue's columns in it since migration 0030), roots (each root's count and
  date);
- **crawled**: the same hosts after one pass of a crawl, as `queue.finish_many` writes
  them (bench/_growth_data.py's mix of outcomes: 60% OK, 22% not yet crawled, the rest
  failures): outcome, status, final URL, title, scheme, link counts, dates, the page
  that named the host and where; its next claim dated a week on; trap windows (a root's
  subdomains, every 4th root); the hourly counts.

Then VACUUM ANALYZE and, per table, its heap (free space and visibility maps included),
its TOAST and each of its indexes, in bytes per host; the total is every table of the
database with all its forks, over the hosts.

Baseline, in the same run and the same way: **the names alone**, one table
(hostname, root) with its primary key on hostname, COPYed in the same order; what
keeping the names at all costs. Target: each variant's total <= 350 B/host (issue 50, at
100M hosts: bytes per host hardly move with the count, what moves is the B-trees' depth).

`--hosts N` (N names over N/5 roots) or `--quick` (100,000): a try, NO VERDICT.
`--readers`: the indexes the panel's, the export's and the claim's statements take on
the loaded rows (bench/_storage_readers.py). `--layout`: also build the candidate
layouts of docs/scaling.md (bench/_storage_layout.py) from the same rows and print their
bytes per host beside the schema's.
"""

from __future__ import annotations

import random
import sys
import time
import zlib
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from _common import (  # noqa: E402
    NO_VERDICT,
    machine_line,
    registered_domain,
    start_database,
    subdomain_of,
    verdict,
    word,
    words,
)
from _growth_data import rebuild_host_hours  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402

from crawler.core.suffixes import root as root_of  # noqa: E402

HOSTS = 1_000_000
HOSTS_PER_ROOT = 5
TARGET = 350  # bytes per host, every table and index counted
WINDOW_EVERY = 4  # as bench/_growth_data.py: every 4th root has a trap window
TABLES = ("hosts", "roots", "trap_window", "host_hours")
BASELINE = """
    CREATE TABLE names_alone (hostname varchar(253) COLLATE "C" PRIMARY KEY,
                              root varchar(253) COLLATE "C" NOT NULL)
"""


def names(rng: random.Random, count: int) -> list[tuple[str, str, int]]:
    """`count` distinct (hostname, root, position of the host in its root: 0 the root
    itself) over count / HOSTS_PER_ROOT registered domains, shuffled."""
    seen: set[str] = set()
    rows = []
    while len(rows) < count:
        domain = registered_domain(rng)
        if domain in seen:
            continue
        seen.add(domain)
        root = root_of(domain)
        rows.append((domain, root, 0))
        for j in range(1, HOSTS_PER_ROOT):
            name = subdomain_of(domain, rng, rng.choice((1, 1, 1, 2)))
            if name not in seen:
                seen.add(name)
                rows.append((name, root, j))
    rows = rows[:count]
    rng.shuffle(rows)
    return rows


OUTCOMES = [("OK", 60), (None, 22), ("DNS_NXDOMAIN", 8), ("TCP_TIMEOUT", 4)]
OUTCOMES += [("TLS_HANDSHAKE", 3), ("HTTP_TIMEOUT", 3)]


def crawled_columns(rng: random.Random, name: str, root: str, j: int) -> dict:
    """One host's columns after a crawl, as write_results and insert_hosts write them."""
    outcome = rng.choices([o for o, _ in OUTCOMES], [w for _, w in OUTCOMES])[0]
    ok = outcome == "OK"
    crawled = outcome is not None
    found = rng.randint(0, 120) if ok else 0
    return {
        "discovered_from": root if j else None,
        "found_source": "html" if j else None,
        "found_via": "a href" if j else None,
        "outcome": outcome,
        "http_status": rng.choice((200, 200, 200, 200, 301, 403, 404)) if ok else None,
        "final_url": f"https://{name}/" + (word(rng) if rng.random() < 0.3 else "") if ok else None,
        "title": " ".join(word(rng).title() for _ in range(rng.randint(2, 8))) if ok else None,
        "scheme": "https" if ok else None,
        "links_found": found if crawled else None,
        "links_saved": found // 8 if crawled else None,
        "links_filtered": found // 20 if crawled else None,
        "links_over_cap": 0 if crawled else None,
        "fail_streak": 1 if crawled and not ok else 0,
        "crawl_count": 1 if crawled else 0,
        "crawled": crawled,
    }


HOST_COLUMNS = words(
    "hostname root discovered_at discovered_from found_source found_via last_crawled_at"
    " outcome http_status final_url title scheme links_found links_saved links_filtered"
    " links_over_cap fail_streak crawl_count next_claim_at"
)


def copy_rows(conn, table: str, columns: list[str], rows) -> None:
    cursor = conn.connection.driver_connection.cursor()
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def load(engine, rows: list[tuple[str, str, int]], crawled: bool, seed: int) -> float:
    """Empty the tables, then COPY hosts, roots (and, crawled, trap windows and the
    hourly counts) from `rows`; seconds taken."""
    rng = random.Random(seed)
    started = time.perf_counter()
    now = time.time()
    hosts, windows, roots = [], [], {}
    for name, root, j in rows:
        found = now - rng.randrange(30 * 86400)
        facts = crawled_columns(rng, name, root, j) if crawled else {"crawled": False}
        done = found + rng.randrange(86400) if facts["crawled"] else None
        due = done + 7 * 86400 if done else found
        hosts.append([name, root, stamp(found), *host_facts(facts, done), stamp(due)])
        count, first = roots.get(root, (0, due))
        roots[root] = (count + 1, min(first, due))
        if crawled and j and zlib.crc32(root.encode()) % WINDOW_EVERY == 0:
            windows.append((root, name, facts["outcome"] or "DNS_NXDOMAIN", stamp(done or found)))
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE hosts, roots, trap_window, host_hours"))
        conn.execute(text("SET LOCAL session_replication_role = replica"))
        conn.execute(text("SET LOCAL synchronous_commit = off"))
        copy_rows(conn, "hosts", HOST_COLUMNS, hosts)
        copy_rows(
            conn,
            "roots",
            ["root", "hosts", "next_due_at"],
            ((r, n, stamp(d)) for r, (n, d) in roots.items()),
        )
        copy_rows(conn, "trap_window", ["root", "hostname", "outcome", "seen_at"], windows)
        if crawled:
            rebuild_host_hours(conn)
    return time.perf_counter() - started


def host_facts(facts: dict, done: float | None) -> list:
    """The hosts columns after discovered_at and before next_claim_at, in HOST_COLUMNS'
    order."""
    return [
        facts.get("discovered_from"),
        facts.get("found_source"),
        facts.get("found_via"),
        stamp(done) if done else None,
        *(facts.get(c) for c in HOST_COLUMNS[7:16]),
        facts.get("fail_streak", 0),
        facts.get("crawl_count", 0),
    ]


def stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(seconds))


def vacuum_analyze(engine) -> None:
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))


SIZES = """
    SELECT t.relname, 'heap', NULL,
           pg_relation_size(t.oid, 'main') + pg_relation_size(t.oid, 'fsm')
             + pg_relation_size(t.oid, 'vm')
      FROM pg_class t WHERE t.relname = :table AND t.relkind = 'r'
    UNION ALL
    SELECT t.relname, 'toast', NULL, coalesce(pg_total_relation_size(t.reltoastrelid), 0)
      FROM pg_class t WHERE t.relname = :table AND t.relkind = 'r'
    UNION ALL
    SELECT t.relname, 'index', i.relname, pg_total_relation_size(i.oid)
      FROM pg_class t JOIN pg_index x ON x.indrelid = t.oid JOIN pg_class i ON i.oid = x.indexrelid
     WHERE t.relname = :table AND t.relkind = 'r'
"""
TOTAL = """
    SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'm') AND c.relname <> ALL(:left_out)
"""


def sizes(conn, table: str) -> list[tuple[str, str, str | None, int]]:
    """(table, heap | toast | index, the index's name, bytes) of one table."""
    rows = conn.execute(text(SIZES), {"table": table}).all()
    return sorted(rows, key=lambda r: (r[1] != "heap", r[1] != "toast", -r[3]))


def report(engine, label: str, hosts: int, tables=TABLES, left_out=("names_alone",)) -> float:
    """Print each table's parts in bytes per host; the database's total per host."""
    with engine.connect() as conn:
        for table in tables:
            parts = sizes(conn, table)
            whole = sum(b for *_, b in parts)
            print(f"{label} {table}: {whole / hosts:.1f} B/host ({whole / 2**20:.1f} MB)")
            for _, kind, index, size in parts:
                if size:
                    print(f"{label} {table} {index or kind}: {size / hosts:.1f} B/host")
        total = conn.execute(text(TOTAL), {"left_out": list(left_out)}).scalar_one()
    return float(total) / hosts


COLUMNS = (
    "SELECT attname FROM pg_attribute WHERE attrelid = CAST(:t AS regclass)"
    " AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
)


def column_bytes(engine, hosts: int, table: str = "hosts") -> None:
    """Each column's bytes per host in `table`'s heap (pg_column_size; NULL: none), the
    facts the plan to 350 B/host weighs (docs/scaling.md)."""
    with engine.connect() as conn:
        names = conn.execute(text(COLUMNS), {"t": table}).scalars().all()
        sums = ", ".join(f'sum(coalesce(pg_column_size("{c}"), 0))' for c in names)
        sizes = conn.execute(text(f"SELECT {sums} FROM {table}")).one()
    line = ", ".join(f"{n} {int(b) / hosts:.1f}" for n, b in zip(names, sizes, strict=True))
    print(f"# {table} columns, B/host (values only): {line}")


def baseline(engine, rows: list[tuple[str, str, int]]) -> float:
    """Bytes per host of the names alone: (hostname, root) and its primary key."""
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS names_alone"))
        conn.execute(text(BASELINE))
        copy_rows(conn, "names_alone", ["hostname", "root"], ((h, r) for h, r, _ in rows))
    vacuum_analyze(engine)
    with engine.connect() as conn:
        parts = sizes(conn, "names_alone")
    for _, kind, index, size in parts:
        if size:
            print(f"names alone   {index or kind}: {size / len(rows):.1f} B/host")
    return sum(b for *_, b in parts) / len(rows)


def count_arg(default: int) -> int:
    if "--hosts" in sys.argv:
        return int(sys.argv[sys.argv.index("--hosts") + 1])
    return 100_000 if "--quick" in sys.argv else default


def main() -> None:
    print(machine_line())
    started = time.perf_counter()
    count = count_arg(HOSTS)
    judged = count == HOSTS
    rng = random.Random(20261207)
    rows = names(rng, count)
    roots = len({r for _, r, _ in rows})
    print(f"# {len(rows):,} hosts over {roots:,} roots, COPYed in a shuffled order")
    url = start_database("hostcrawl-bench-storage-")
    engine = create_engine(url, pool_size=1)
    alone = baseline(engine, rows)
    print(f"names alone: {alone:.1f} B/host (the baseline)")
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE names_alone"))
    for variant, crawled in (("seeded", False), ("crawled", True)):
        took = load(engine, rows, crawled, seed=7)
        vacuum_analyze(engine)
        print(f"# {variant}: loaded in {took:.0f} s")
        per_host = report(engine, variant, len(rows))
        column_bytes(engine, len(rows))
        ok = per_host <= TARGET if judged else None
        value = f"{per_host:.0f} B/host (x{per_host / alone:.2f} the names alone)"
        word_ = verdict(ok, f"bytes per host, {variant} (1M)", value, f"<= {TARGET} B/host")
        print(
            f"{variant} total: {per_host:.1f} B/host, every table and index"
            f" (target <= {TARGET} B/host) {word_}; x{per_host / alone:.2f} the names alone"
            f" ({alone:.1f} B/host)"
        )
        if "--readers" in sys.argv:
            from _storage_readers import print_readers

            print_readers(engine)
        if "--layout" in sys.argv:
            from _storage_layout import measure_layout

            measure_layout(engine, variant, len(rows), alone)
    if not judged:
        print(f"# {NO_VERDICT}: {count:,} hosts, the verdict is on {HOSTS:,}")
    engine.dispose()
    print(f"# total run time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
