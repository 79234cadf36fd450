"""bench/slowweb.py's yardstick, the politeness bound (bench/_slowweb_bound.py): the best
order under the crawl's rules, computed by code that shares none with the crawler."""

from __future__ import annotations

import ast
import importlib.util
import sys

import pytest

from crawler.db.server.engine import PROJECT_ROOT

PATH = PROJECT_ROOT / "bench" / "_slowweb_bound.py"


@pytest.fixture(scope="module")
def bound():
    spec = importlib.util.spec_from_file_location("_slowweb_bound", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def rules(bound, robots=True, concurrency=2):
    return bound.Rules(concurrency, robots, download_timeout=20, dns_timeout=5, dns_seconds=0.1)


def test_the_bound_imports_nothing_of_the_crawler():
    tree = ast.parse(PATH.read_text())
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert not any(name.split(".")[0] in {"crawler", "tests", "webpanel"} for name in imported)


def test_a_root_serves_its_hosts_concurrency_at_a_time_in_seed_order(bound):
    names = ["a.test", "b.a.test", "c.a.test", "x.test"]
    roots = bound.root_by_suffix(names, ["a.test", "x.test"])
    assert roots == {
        "a.test": "a.test",
        "b.a.test": "a.test",
        "c.a.test": "a.test",
        "x.test": "x.test",
    }
    kinds = dict.fromkeys(names, "answering")
    delays = dict.fromkeys(names, 1.0)
    # robots.txt and the page, 1 s each, after a 0.1 s DNS reply: c.a.test waits for a slot.
    assert bound.politeness_bound(names, roots, kinds, delays, rules(bound), 1.0) == 4.2
    assert bound.politeness_bound(names, roots, kinds, delays, rules(bound, False), 1.0) == 2.2
    assert (
        bound.politeness_bound(names, roots, kinds, delays, rules(bound, concurrency=3), 1.0) == 2.1
    )


def test_a_hanging_host_holds_its_slot_until_the_timeout_and_dead_ones_barely(bound):
    names = ["a.test", "b.a.test", "c.a.test", "d.a.test"]
    roots = dict.fromkeys(names, "a.test")
    delays = dict.fromkeys(names, 1.0)
    kinds = {
        "a.test": "hanging",
        "b.a.test": "answering",
        "c.a.test": "answering",
        "d.a.test": "refused",
    }
    # b.a.test ends at 2.1, c.a.test at 4.2 on the slot a.test does not hold for 20.1 s.
    assert bound.politeness_bound(names, roots, kinds, delays, rules(bound), 1.0) == pytest.approx(
        4.2
    )
    kinds["a.test"] = "nxdomain"  # its slot is free again after its DNS reply
    assert bound.politeness_bound(names, roots, kinds, delays, rules(bound), 1.0) == pytest.approx(
        2.2
    )
    kinds["a.test"] = "no_dns"  # two DNS timeouts: 10 s
    assert bound.politeness_bound(names, roots, kinds, delays, rules(bound), 1.0) == pytest.approx(
        4.2
    )
