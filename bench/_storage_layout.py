"""Candidate layouts of a host's rows for bench/storage.py --layout (docs/scaling.md,
"The plan to 350 bytes a host"): scratch tables built from the hosts rows just loaded,
in the same shuffled order with their indexes in place, then measured as the schema is.
Nothing reads them; they say what a layout would weigh before any reader is moved to it.

The first candidate, **merged** (one row per host, the queue's columns in the hosts row),
is the schema since migration 0030: storage.py's own figures are its figures.

- **compact**: the hosts row keyed by (root, the labels left of it): the name is never
  stored whole; hidden rows (under a deny entry) in a partition of their own, so the
  shown partition's key is the main list's walk and needs no partial copy; the name-tree
  walk within a root is (root, reverse(labels)); no index on the due date alone (the
  claim goes through roots.next_due_at, then each root's due rows);
- **compact_ids**: compact, each root named by a number (a table of root names and
  numbers beside it, counted).
"""

from __future__ import annotations

import time

from sqlalchemy import text

HOST_STATE = """
    CREATE TABLE {table} (
        {key},
        next_claim_at timestamptz, status_reason varchar(16), blocked_reason text,
        blocked_at timestamptz, note text, denied_by varchar(253) COLLATE "C",
        claimed_by varchar(128), claimed_at timestamptz, unfinished_claims smallint DEFAULT 0,
        discovered_at timestamptz, discovered_from varchar(253) COLLATE "C",
        found_source varchar(16), found_via varchar(64), last_crawled_at timestamptz,
        outcome varchar(32), http_status smallint, final_url text, title text,
        scheme varchar(8), links_found int, links_saved int, links_filtered int,
        links_over_cap int, extract_stopped varchar(16), name_flood text,
        fail_streak int DEFAULT 0, crawl_count int DEFAULT 0, audited_at timestamptz,
        audit_outcome varchar(32), held_tries int DEFAULT 0, held_at timestamptz,
        held_outcome varchar(32)
    ) {options}
"""
COPIED = """
    next_claim_at, status_reason, blocked_reason, blocked_at, note, denied_by, claimed_by,
    claimed_at, unfinished_claims, discovered_at, discovered_from, found_source, found_via,
    last_crawled_at, outcome, http_status, final_url, title, scheme, links_found, links_saved,
    links_filtered, links_over_cap, extract_stopped, name_flood, fail_streak, crawl_count,
    audited_at, audit_outcome, held_tries, held_at, held_outcome
"""
ROUTABLE = "status_reason IS NULL AND denied_by IS NULL"
HIDDEN = "status_reason IS NOT NULL OR denied_by IS NOT NULL"

# labels: the name left of its root ('' for the root itself): hostname = labels.root
COMPACT = [
    HOST_STATE.format(
        table="compact",
        key='root varchar(253) COLLATE "C", labels varchar(253) COLLATE "C",'
        " hidden boolean NOT NULL DEFAULT false, PRIMARY KEY (root, labels, hidden)",
        options="PARTITION BY LIST (hidden)",
    ),
    "CREATE TABLE compact_shown PARTITION OF compact FOR VALUES IN (false) WITH (fillfactor = 90)",
    "CREATE TABLE compact_hidden PARTITION OF compact FOR VALUES IN (true)",
    "CREATE INDEX compact_tree ON compact (root, reverse(labels::text))",
    f"CREATE INDEX compact_root_due ON compact (root, next_claim_at) WHERE {ROUTABLE}",
    "CREATE INDEX compact_discovered_at ON compact (discovered_at)",
    "CREATE INDEX compact_outcome ON compact (outcome)",
]
COMPACT_ROWS = f"""
    INSERT INTO compact (root, labels, hidden, {COPIED})
    SELECT h.root, left(h.hostname, greatest(length(h.hostname) - length(h.root) - 1, 0)),
           h.status_reason IS NOT NULL OR h.denied_by IS NOT NULL, {COPIED}
      FROM hosts h
     ORDER BY h.ctid
"""
# As compact, with each root named by a number: 4 bytes in each row and index entry where
# compact has the root's name (~15 bytes and padding). roots would carry the number, with
# a unique index on it (counted); the scratch table that maps them is not.
ROOT_IDS = (
    "CREATE TABLE compact_ids_roots AS SELECT root, row_number() OVER ()::int AS id FROM roots"
)
COMPACT_IDS = [
    ROOT_IDS,
    "CREATE UNIQUE INDEX compact_ids_roots_id ON compact_ids_roots (id)",
    HOST_STATE.format(
        table="compact_ids",
        key='root_id int, labels varchar(253) COLLATE "C",'
        " hidden boolean NOT NULL DEFAULT false, PRIMARY KEY (root_id, labels, hidden)",
        options="PARTITION BY LIST (hidden)",
    ),
    "CREATE TABLE compact_ids_shown PARTITION OF compact_ids FOR VALUES IN (false)"
    " WITH (fillfactor = 90)",
    "CREATE TABLE compact_ids_hidden PARTITION OF compact_ids FOR VALUES IN (true)",
    "CREATE INDEX compact_ids_tree ON compact_ids (root_id, reverse(labels::text))",
    f"CREATE INDEX compact_ids_root_due ON compact_ids (root_id, next_claim_at) WHERE {ROUTABLE}",
    "CREATE INDEX compact_ids_discovered_at ON compact_ids (discovered_at)",
    "CREATE INDEX compact_ids_outcome ON compact_ids (outcome)",
]
COMPACT_IDS_ROWS = f"""
    INSERT INTO compact_ids (root_id, labels, hidden, {COPIED})
    SELECT r.id, left(h.hostname, greatest(length(h.hostname) - length(h.root) - 1, 0)),
           h.status_reason IS NOT NULL OR h.denied_by IS NOT NULL, {COPIED}
      FROM hosts h JOIN compact_ids_roots r USING (root)
     ORDER BY h.ctid
"""
LAYOUTS = {
    "compact": (COMPACT, COMPACT_ROWS),
    "compact_ids": (COMPACT_IDS, COMPACT_IDS_ROWS),
}
OTHERS = ("roots", "trap_window", "host_hours")  # kept as they are, counted in each total

SIZES = """
    SELECT c.relname, c.relkind,
           CASE c.relkind WHEN 'r' THEN pg_table_size(c.oid) ELSE pg_total_relation_size(c.oid) END
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relname LIKE :prefix AND c.relkind IN ('r', 'i')
       AND c.relname NOT LIKE :longer AND c.relname <> :name || '_roots'
     ORDER BY c.relkind DESC, 3 DESC
"""


def measure_layout(engine, variant: str, hosts: int, alone: float) -> None:
    """Build each candidate from the loaded rows; print its parts and total per host."""
    with engine.connect() as conn:
        others = conn.execute(
            text(
                "SELECT sum(pg_total_relation_size(t::regclass))"
                " FROM unnest(CAST(:t AS text[])) AS t"
            ),
            {"t": list(OTHERS)},
        ).scalar_one()
    for name, (ddl, rows) in LAYOUTS.items():
        started = time.perf_counter()
        with engine.begin() as conn:
            for statement in ddl:
                conn.execute(text(statement))
            conn.execute(text(rows))
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"VACUUM ANALYZE {name}"))
            prefix = {"prefix": f"{name}%", "longer": f"{name}_ids%", "name": name}
            parts = conn.execute(text(SIZES), prefix).all()  # compact: not compact_ids
        for relname, kind, size in parts:
            what = "heap" if kind == "r" else "index"
            print(f"{variant} {name} {relname} ({what}): {size / hosts:.1f} B/host")
        total = (sum(size for *_, size in parts) + float(others)) / hosts
        took = time.perf_counter() - started
        print(
            f"{variant} {name} layout total: {total:.1f} B/host with {', '.join(OTHERS)}"
            f" as they are; x{total / alone:.2f} the names alone ({took:.0f} s to build)"
        )
        with engine.begin() as conn:
            conn.execute(text(f"DROP TABLE {name}"))
            conn.execute(text(f"DROP TABLE IF EXISTS {name}_roots"))
