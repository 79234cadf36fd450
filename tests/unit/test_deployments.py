"""The deployment (crawler.db.deployments): picked once per engine, the same answers on one
server and on a Citus cluster, each deployment's statements written out (the cluster's
are one server's with their routing pins, nothing else), and the one way statements are
still built from pieces refuses a piece it has no place for."""

from __future__ import annotations

import ast
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from crawler.core.hostnames import root
from crawler.db import claims, cluster, deny_entries, deployments, export, queue, trap_windows
from crawler.db.engine import PROJECT_ROOT
from crawler.db.host_filter import HostFilter
from crawler.db.queue import Crawled, CrawlResult
from crawler.db.sql_pieces import DUE, filled
from webpanel.queries.host_rows import host_page

STATEMENTS = ("write_results", "schedule", "trim_windows", "lower_next_due", "recount_windows")
# The pins, in words: a filter on a distributed table's root by the group's roots, before
# AND or a statement's only WHERE.
PINS = re.compile(r"\b\w\.root = ANY \( :roots \) AND |WHERE \w\.root = ANY \( :roots \) (?!AND)")


def words(sql: str) -> list[str]:
    return re.sub(r"([(),])", r" \1 ", sql).split()


def binds(statement) -> dict:
    """{parameter: the name of its type} of a statement, as Postgres gets it."""
    compiled = statement.compile(dialect=postgresql.dialect())
    return {name: type(bind.type).__name__ for name, bind in compiled.binds.items()}


@pytest.mark.parametrize("name", STATEMENTS)
def test_the_clusters_statement_is_one_servers_with_its_pins_and_nothing_else(name):
    plain = " ".join(words(getattr(deployments.ONE_SERVER, name).text))
    pinned = " ".join(words(getattr(deployments.CLUSTER, name).text)) + " "
    unpinned, pins = PINS.subn("", pinned)
    assert pins and unpinned.split() == plain.split()


@pytest.mark.parametrize("name", STATEMENTS)
def test_each_form_has_its_parameters_typed(name):
    plain = binds(getattr(deployments.ONE_SERVER, name))
    pinned = binds(getattr(deployments.CLUSTER, name))
    assert plain.items() <= pinned.items() and pinned["roots"] == "ARRAY"


def defaulted_deployments(root: Path) -> list[str]:
    """Every function of crawler/, webpanel/ and bench/ below `root` whose deployment
    argument has a default, as file:line name."""
    found = []
    for path in sorted(
        p for top in ("crawler", "webpanel", "bench") for p in root.glob(f"{top}/**/*.py")
    ):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            given = node.args.posonlyargs + node.args.args
            defaulted = [
                *given[len(given) - len(node.args.defaults) :],
                *(
                    a
                    for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)
                    if d is not None
                ),
            ]
            for arg in defaulted:
                said = f"{arg.arg} {ast.unparse(arg.annotation) if arg.annotation else ''}"
                if "deployment" in said.lower():
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    return found


def test_no_statement_builder_defaults_to_a_deployment():
    """A caller names the deployment (deployment_of its connection): with a default, one
    that forgot got one server's statement on a cluster, without a word."""
    assert defaulted_deployments(PROJECT_ROOT) == []


def test_a_part_goes_in_its_place():
    assert filled("SELECT 1 WHERE true {under} LIMIT 1", under="AND x") == (
        "SELECT 1 WHERE true AND x LIMIT 1"
    )
    assert ":root" in filled(DUE, under="AND q.hostname = :root")


def test_a_part_with_no_place_in_the_statement_is_refused():
    with pytest.raises(ValueError, match=r"no \{under\} in the statement"):
        filled("SELECT 1 WHERE true LIMIT 1", under="AND x")


def test_a_place_with_no_part_is_refused():
    with pytest.raises(KeyError, match="under"):
        filled("SELECT 1 WHERE true {under}")


@pytest.fixture(params=["clean_db", "cluster_db"])
def either(request):
    """The engine of one deployment's empty database, and the deployment it must be."""
    expected = deployments.CLUSTER if request.param == "cluster_db" else deployments.ONE_SERVER
    return request.getfixturevalue(request.param), expected


def test_the_deployment_is_picked_once_per_engine(either, monkeypatch):
    engine, expected = either
    asked = []
    real = cluster.topology
    monkeypatch.setattr(cluster, "topology", lambda conn: asked.append(1) or real(conn))
    fresh = create_engine(engine.url)
    try:
        picked = [deployments.deployment_of(fresh)]
        for _ in range(2):
            with fresh.connect() as conn:
                picked.append(deployments.deployment_of(conn))
        with Session(fresh) as session:
            picked.append(deployments.deployment_of(session))
        assert all(p is expected for p in picked) and len(asked) == 1
        other = create_engine(engine.url)
        assert deployments.deployment_of(other) is expected and len(asked) == 2
        other.dispose()
    finally:
        fresh.dispose()


ROOTS = [f"r{i}.test" for i in range(10)]  # over several of the cluster's shard groups
SHOWN = sorted(n for r in ROOTS[:8] for n in (r, f"a.{r}", f"b.a.{r}")) + ["r8.test"]
FAILED = [f"a.r{i}.test" for i in range(4)]


def small_world(engine) -> None:
    """Ten roots of three hosts: r9.test under no_follow, a.r8.test blocked; every other
    host claimed, the roots crawled (they answer) and four subdomains (they fail), the
    rest given back but a.r4.test, still claimed."""
    queue.save_hosts(engine, [n for r in ROOTS for n in (r, f"a.{r}", f"b.a.{r}")])
    deny_entries.add_no_follow(engine, ["r9.test"], actor="test")
    deny_entries.upsert_blocked(engine, "a.r8.test", "test block")
    taken = claims.claim(engine, 100, "w1")
    assert sorted(taken) == sorted(SHOWN)
    crawled = [Crawled(r, CrawlResult("OK", 200, title=r)) for r in ROOTS[:8]]
    crawled += [Crawled(h, CrawlResult("DNS_NXDOMAIN")) for h in FAILED]
    queue.finish_many(engine, crawled)
    trap_windows.record_outcomes(engine, [(h, "DNS_NXDOMAIN") for h in FAILED], 4)
    done = {c.hostname for c in crawled} | {"a.r4.test"}
    queue.release(engine, [h for h in taken if h not in done])
    with engine.begin() as conn:
        conn.execute(text("UPDATE hosts SET discovered_at = '2026-01-01'"))


def answers(engine) -> dict:
    """What the panel's list, the export, the rollups and the claim say."""
    with Session(engine) as session:
        first = host_page(session, HostFilter(), limit=5)
        second = host_page(session, HostFilter(), after=first.next, limit=5)
        failed = host_page(session, HostFilter(outcome="DNS_NXDOMAIN", sort="newest"))
    exported = [json.loads(line)["hostname"] for line in export.jsonl_lines(engine, HostFilter())]
    with engine.connect() as conn:
        roots = conn.execute(
            text("SELECT root, hosts, crawled_ok, failed, window_size FROM roots ORDER BY root")
        ).all()
    polite = claims.claim_polite(engine, 50, "w2", timedelta(minutes=5), claims.RootLimits(1))
    return {
        "pages": [[r.hostname for r in p.rows] for p in (first, second, failed)],
        "exported": exported,
        "roots": [tuple(r) for r in roots],
        "claimed": sorted(root(h) for h in polite.hosts),
    }


def test_both_deployments_give_the_same_answers(either):
    engine, _ = either
    small_world(engine)
    got = answers(engine)
    assert got["pages"] == [SHOWN[:5], SHOWN[5:10], FAILED[::-1]]
    assert got["exported"] == SHOWN
    assert got["roots"] == [(r, 3, 1, 1, 1) for r in ROOTS[:4]] + [
        (r, 3, 1, 0, 0) for r in ROOTS[4:8]
    ] + [("r8.test", 3, 0, 0, 0), ("r9.test", 3, 0, 0, 0)]
    # r4.test's one claim running fills its concurrency of 1; every other root gives one.
    assert got["claimed"] == ROOTS[:4] + ROOTS[5:9]
