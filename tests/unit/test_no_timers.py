"""No test asserts a duration: speed is measured in bench/, and a timer in a test fails
on a loaded machine. Tests wait on a condition with tests/waiting.py's bounded wait.

This scans every test module's syntax tree for an `assert` that reads a clock, either
directly (`assert time.monotonic() - t < 5`) or through a name the function assigned
from a clock (`took = time.monotonic() - start; assert took < 5`).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}


def reads_a_clock(node: ast.AST, timed_names: set[str]) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            called = inner.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if name in CLOCKS and not inner.args:
                return True
        if isinstance(inner, ast.Name) and inner.id in timed_names:
            return True
    return False


def names_from_clocks(scope: ast.AST) -> set[str]:
    """Names assigned from a clock in `scope` (transitively: `took = now - start`)."""
    timed: set[str] = set()
    assigns = [n for n in ast.walk(scope) if isinstance(n, ast.Assign | ast.AnnAssign)]
    while True:
        found = {
            target.id
            for node in assigns
            if node.value is not None and reads_a_clock(node.value, timed)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        if found <= timed:
            return timed
        timed |= found


def timed_asserts(source: str) -> list[int]:
    """Line numbers of asserts that read a clock, directly or through a name."""
    tree = ast.parse(source)
    lines = []
    scopes = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for scope in [tree, *scopes]:
        timed = names_from_clocks(scope)
        for node in ast.walk(scope):
            if isinstance(node, ast.Assert) and reads_a_clock(node.test, timed):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_no_test_asserts_a_duration():
    modules = sorted(TESTS.rglob("*.py"))
    assert len(modules) > 50  # the scan saw the suite
    found = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in modules
        for line in timed_asserts(path.read_text())
    ]
    assert found == [], "wait on a condition (tests/waiting.py) or move the speed to bench/"


def test_the_scan_sees_each_way_of_timing():
    direct = "import time\ndef f(t):\n    assert time.monotonic() - t < 5\n"
    by_name = (
        "import time\ndef f():\n    start = time.perf_counter()\n    g()\n"
        "    took = time.perf_counter() - start\n    assert took < 1, took\n"
    )
    in_a_loop = (
        "from time import monotonic\ndef f():\n    deadline = monotonic() + 5\n"
        "    while not ready():\n        assert monotonic() < deadline\n"
    )
    untimed = "import time\ndef f(rows):\n    assert rows and time.gmtime(0)\n"
    assert timed_asserts(direct) == [3]
    assert timed_asserts(by_name) == [6]
    assert timed_asserts(in_a_loop) == [5]
    assert timed_asserts(untimed) == []
