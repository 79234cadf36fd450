"""`make bench`'s summary: each script's verdicts land in $BENCH_RESULTS through
bench/_common.verdict, and bench/summary.py prints them as one table."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from crawler.db.engine import PROJECT_ROOT

BENCH = PROJECT_ROOT / "bench"
A_SCRIPT = """
import sys
sys.path.insert(0, {bench!r})
from _common import verdict
print(verdict(True, "links/s", "250,000", ">= 200,000"))
print(verdict(None, "pages/s vs bare", "x0.9", ">= x0.8"))
print(verdict(False))  # printed, not recorded: no figure named
"""


def test_verdicts_are_recorded_and_summed_up_in_one_table(tmp_path):
    results = tmp_path / "results.jsonl"
    script = tmp_path / "a_bench.py"
    script.write_text(A_SCRIPT.format(bench=str(BENCH)))
    env = {"BENCH_RESULTS": str(results), "PATH": "/usr/bin:/bin"}
    printed = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, check=True
    )
    assert printed.stdout.split() == ["PASS", "NO", "VERDICT", "FAIL"]
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["script"], r["figure"], r["verdict"]) for r in lines] == [
        ("a_bench.py", "links/s", "PASS"),
        ("a_bench.py", "pages/s vs bare", "NO VERDICT"),
    ]

    summary = subprocess.run(
        [sys.executable, str(BENCH / "summary.py"), str(results), "a_bench.py", "crashed.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split("|")[1:-1] for line in summary.splitlines() if line.startswith("| ")]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["script", "figure", "value", "target", "verdict"],
        ["a_bench.py", "links/s", "250,000", ">= 200,000", "PASS"],
        ["a_bench.py", "pages/s vs bare", "x0.9", ">= x0.8", "NO VERDICT"],
        ["crashed.py", "-", "-", "-", "MISSING"],
    ]
    assert "1 PASS, 0 FAIL, 2 without a verdict" in summary


def test_the_makefile_runs_every_bench_script_into_the_summary():
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    continued = re.search(r"^BENCHES := ((?:.*\\\n)*.*)$", makefile, re.M)[1]
    listed = continued.replace("\\", " ").split()
    scripts = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))
    assert sorted(listed) == [s for s in scripts if s != "summary.py"]
    assert "bench/summary.py $(BENCH_RESULTS) $(BENCHES)" in makefile
