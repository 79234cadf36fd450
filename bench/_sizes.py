"""bench/roundtrips.py's sizes: the bytes a host of the per-root tables (the ones Citus
distributes by root) and of each of their indexes, on one server or on a cluster (its
shards summed)."""

from __future__ import annotations

from collections import Counter

import psycopg
from sqlalchemy import text

from tests.citus_cluster import DATABASE

DISTRIBUTED = text(
    "SELECT table_name::text FROM citus_tables WHERE citus_table_type = 'distributed' ORDER BY 1"
)
# On a cluster, Citus's sums over a table's shards; on one server, Postgres's own.
SIZES = {
    True: "SELECT citus_table_size(:t), citus_total_relation_size(:t)",
    False: "SELECT pg_table_size(:t), pg_total_relation_size(:t)",
}
# Every index of the per-root tables on one node, a shard's named by its table's (the
# shard id suffix cut off).
INDEXES = """
    SELECT regexp_replace(c.relname, '_[0-9]+$', ''), pg_relation_size(c.oid)
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = 'public' AND regexp_replace(t.relname, '_[0-9]+$', '') = ANY(%s)
"""


def shards_shown(node, sql: str, params: tuple) -> list[tuple]:
    """`sql`'s rows on `node`, in a session that sees the shards in pg_class (Citus hides
    them from other sessions' catalog queries on a worker; one server ignores it)."""
    with psycopg.connect(
        host="127.0.0.1",
        port=node.port,
        user="postgres",
        dbname=DATABASE,
        autocommit=True,
        options="-c citus.override_table_visibility=off",
    ) as conn:
        return conn.execute(sql, params).fetchall()


def per_root_tables(cluster_engine) -> list[str]:
    """The tables the cluster distributes by root."""
    with cluster_engine.connect() as conn:
        return list(conn.execute(DISTRIBUTED).scalars())


def bytes_per_host(engine, tables: list[str], is_cluster: bool):
    """(bytes a host in all, [(table, its heap's bytes a host, its indexes')], hosts)."""
    with engine.connect() as conn:
        hosts = conn.execute(text("SELECT count(*) FROM hosts")).scalar_one()
        rows = []
        for table in tables:
            heap, total = conn.execute(text(SIZES[is_cluster]), {"t": table}).one()
            rows.append((table, heap / hosts, (total - heap) / hosts))
    return sum(heap + idx for _, heap, idx in rows), rows, hosts


def index_bytes(nodes, tables: list[str], hosts: int) -> list[tuple[str, float]]:
    """Each index of `tables`, its bytes a host summed over `nodes`, biggest first."""
    sizes: Counter = Counter()
    for node in nodes:
        for name, size in shards_shown(node, INDEXES, (tables,)):
            sizes[name] += size
    return [(name, size / hosts) for name, size in sizes.most_common()]
