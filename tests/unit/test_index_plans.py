"""Readers keep an index plan when an index goes (docs/scaling.md, "What each index is
for"): a root's page walks the queue's index over reversed names, in order, once hosts
has none of its own (migration 0028). On one server and on the cluster."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text
from sqlalchemy.dialects import postgresql

from crawler.db import bulk
from webpanel.queries import root_rows
from webpanel.queries.paging import keyset

FARM = "farm.test"


def worker_nodes(db, statement) -> list[dict]:
    """The nodes of the plan that reads the rows: on a cluster, those of its tasks (on
    the workers), the coordinator's merge of their pages left out."""
    sql = statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    with db.connect() as conn:
        plan = conn.execute(text(f"EXPLAIN (FORMAT JSON) {sql}")).scalar_one()[0]["Plan"]
    nodes, stack, tasks = [], [plan], []
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.get("Plans", []))
        for task in node.get("Distributed Query", {}).get("Job", {}).get("Tasks", []):
            tasks.extend(step["Plan"] for steps in task["Remote Plan"] for step in steps)
    if not tasks:
        return nodes
    nodes, stack = [], tasks
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.get("Plans", []))
    return nodes


def reads_of(nodes: list[dict], table: str) -> list[dict]:
    """The nodes that read `table` (on a cluster, its shard: the table's name and a number)."""
    return [n for n in nodes if re.fullmatch(rf"{table}(_\d+)?", n.get("Relation Name", ""))]


@pytest.fixture
def farm(either):
    """A root of 20,000 hosts among 2,000 small roots (20,000 hosts), analyzed."""
    names = [f"h{i}.s{i % 7}.{FARM}" for i in range(20_000)]
    names += [f"w{i}.r{i % 2_000}.test" for i in range(20_000)]
    bulk.collect(bulk.seed(either, names))
    with either.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE hosts; ANALYZE queue"))
    return either


def test_a_roots_page_walks_the_reversed_names_of_the_queue_in_order(farm):
    page, *_ = keyset(
        root_rows.subdomain_statement(FARM), root_rows.SUBDOMAIN_ORDER, None, None, 50
    )
    nodes = worker_nodes(farm, page)
    walks = reads_of(nodes, "queue")
    assert [n["Node Type"] for n in walks] == ["Index Scan"], nodes
    assert walks[0]["Index Name"].startswith("ix_queue_reversed"), nodes
    assert all(n["Node Type"] != "Sort" for n in nodes), nodes  # the page is the walk's order
    # Each row's facts by hosts' whole key: no index of hosts' own over the names' tree.
    probes = reads_of(nodes, "hosts")
    assert probes and all(n.get("Index Name", "").startswith("pk_hosts") for n in probes), nodes


def test_a_roots_page_shows_every_host_of_the_root_in_name_tree_order(farm):
    with farm.connect() as conn:
        first = root_rows.subdomain_page(conn, FARM, limit=500)
        second = root_rows.subdomain_page(conn, FARM, after=first.next, limit=500)
    shown = [r.hostname for r in first.rows + second.rows]
    tree = sorted((f"h{i}.s{i % 7}.{FARM}" for i in range(20_000)), key=lambda n: n[::-1])
    assert shown == tree[:1000]
