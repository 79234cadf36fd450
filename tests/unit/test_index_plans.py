"""Readers keep an index plan when an index goes (docs/scaling.md, "What each index is
for"). hosts has no index by root (migration 0028) and one row a host (0030): a root's
page walks the index over reversed names, in order; the root filter of the list and the
export takes the partial indexes by root; a list reads each host once. On one server and
on the cluster."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text
from sqlalchemy.dialects import postgresql

from crawler.db.deployments import deployment_of
from crawler.db.operators import bulk
from crawler.db.operators.export import export_statement
from crawler.db.operators.host_filter import HostFilter
from webpanel.queries import root_rows
from webpanel.queries.host_rows import host_page, host_statement
from webpanel.queries.paging import keyset

FARM = "farm.test"
SMALL = "small.test"  # 30 hosts, 10 of them out of routing
SMALL_SHOWN = [f"y{i}.{SMALL}" for i in range(10, 30)]


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
    """A root of 20,000 hosts among 2,000 small roots (20,000 hosts), and one of 30 with a
    subtree of 10 out of routing (as a no_follow entry's sweep leaves it); analyzed."""
    names = [f"h{i}.s{i % 7}.{FARM}" for i in range(20_000)]
    names += [f"w{i}.r{i % 2_000}.test" for i in range(20_000)]
    names += [f"x{i}.s.{SMALL}" if i < 10 else f"y{i}.{SMALL}" for i in range(30)]
    bulk.collect(bulk.seed(either, names))
    with either.begin() as conn:
        conn.execute(
            text(
                f"UPDATE hosts SET denied_by = 's.{SMALL}'"
                f" WHERE root = '{SMALL}' AND hostname LIKE '%.s.{SMALL}'"
            )
        )
    with either.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE hosts"))
    return either


def test_a_roots_page_walks_the_reversed_names_in_order(farm):
    page, *_ = keyset(
        root_rows.subdomain_statement(FARM), root_rows.SUBDOMAIN_ORDER, None, None, 50
    )
    nodes = worker_nodes(farm, page)
    walks = reads_of(nodes, "hosts")
    assert [n["Node Type"] for n in walks] == ["Index Scan"], nodes  # the facts in its rows
    assert walks[0]["Index Name"].startswith("ix_hosts_reversed"), nodes
    assert all(n["Node Type"] != "Sort" for n in nodes), nodes  # the page is the walk's order


def test_a_roots_page_shows_every_host_of_the_root_in_name_tree_order(farm):
    with farm.connect() as conn:
        first = root_rows.subdomain_page(conn, FARM, limit=500)
        second = root_rows.subdomain_page(conn, FARM, after=first.next, limit=500)
    shown = [r.hostname for r in first.rows + second.rows]
    tree = sorted((f"h{i}.s{i % 7}.{FARM}" for i in range(20_000)), key=lambda n: n[::-1])
    assert shown == tree[:1000]


@pytest.mark.parametrize("outcome", ["", "none"])
@pytest.mark.parametrize("sort", ["newest", "oldest"])
def test_the_list_by_date_walks_the_shown_hosts_in_the_pages_order(farm, sort, outcome):
    # A bulk seed dates a batch of 20,000 names alike: by a date alone, each page read and
    # sorted that whole run by name, and walked the entries newer than it (0031).
    flt = HostFilter(outcome=outcome, sort=sort)
    nodes = worker_nodes(farm, statement_on(farm, lambda found: host_statement(flt, found)))
    walks = [n for n in reads_of(nodes, "hosts") if "shown_by_date" in n.get("Index Name", "")]
    assert walks and walks[0]["Node Type"] == "Index Scan", nodes
    assert walks[0]["Scan Direction"] == ("Backward" if sort == "newest" else "Forward"), nodes
    assert all("Sort" not in n["Node Type"] for n in nodes), nodes  # the walk is the order
    with farm.begin() as conn:
        first = host_page(conn, flt, limit=40)
        second = host_page(conn, flt, after=first.next, limit=40)
    shown = [(r.discovered_at, r.hostname) for r in first.rows + second.rows]
    assert shown == sorted(shown, reverse=sort == "newest") and len(set(shown)) == 80
    if sort == "newest":  # the last batch's 20 shown names, then the run of 20,000 before it
        assert [h for _, h in shown[:20]] == sorted(SMALL_SHOWN, reverse=True)
        assert len({d for d, _ in shown[20:]}) == 1


def statement_on(db, make):
    with db.connect() as conn:
        return make(deployment_of(conn))


@pytest.mark.parametrize(
    ("make", "indexes"),
    [
        (
            lambda found: host_statement(HostFilter(root=SMALL), deployment=found),
            {"ix_hosts_root_due"},
        ),
        (
            lambda found: export_statement(HostFilter(root=SMALL), found),
            {"ix_hosts_root_due"},
        ),
        (
            lambda found: export_statement(HostFilter(root=SMALL, include_denied=True), found),
            {"ix_hosts_root_due", "ix_hosts_hidden_root"},
        ),
    ],
    ids=["list of a root", "export of a root", "with denied"],
)
def test_a_root_is_read_by_its_partial_indexes(farm, make, indexes):
    """The root's rows by its partial indexes, never a walk of every host."""
    nodes = worker_nodes(farm, statement_on(farm, make))
    used = {n.get("Index Name", "").rsplit("_1", 1)[0] for n in reads_of_indexes(nodes)}
    assert indexes <= used, nodes
    assert all(n["Node Type"] != "Seq Scan" for n in reads_of(nodes, "hosts")), nodes


@pytest.mark.parametrize(
    "make",
    [
        lambda found: export_statement(HostFilter(), found),
        lambda found: host_statement(HostFilter(outcome="none"), deployment=found),
    ],
    ids=["export", "list never crawled"],
)
def test_a_list_reads_each_host_once(farm, make):
    """One row a host (0030): the list and the export read hosts in one walk, and the deny
    test probes the entries' own index; no join of a host's row to another."""
    nodes = worker_nodes(farm, statement_on(farm, make))
    reads = reads_of(nodes, "hosts")
    walks = [n for n in reads if not n.get("Index Name", "").startswith("ix_hosts_entries")]
    assert len(walks) == 1, nodes


def reads_of_indexes(nodes: list[dict]) -> list[dict]:
    """The nodes that read an index of hosts."""
    return [n for n in nodes if n.get("Index Name", "").startswith("ix_hosts_")]
