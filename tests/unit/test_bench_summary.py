"""`make bench`'s summary: each script's verdicts land in $BENCH_RESULTS through
bench/_common.verdict, and bench/summary.py prints them as one table."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from crawler.db.server.engine import PROJECT_ROOT

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
    cells = [[cell.strip() for cell in row] for row in rows]
    assert [row[:5] for row in cells] == [
        ["script", "figure", "value", "target", "verdict"],
        ["a_bench.py", "links/s", "250,000", ">= 200,000", "PASS"],
        ["a_bench.py", "pages/s vs bare", "x0.9", ">= x0.8", "NO VERDICT"],
        ["crashed.py", "-", "-", "-", "MISSING"],
    ]
    assert cells[0][5:] == ["date", "commit"] and cells[-1][5:] == ["-", "-"]
    assert all(row[5] == lines[0]["date"] and row[6] == lines[0]["commit"] for row in cells[1:3])
    assert "1 PASS, 0 FAIL, 2 without a verdict" in summary


def test_the_makefile_runs_every_bench_script_into_the_summary():
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    continued = re.search(r"^BENCHES := ((?:.*\\\n)*.*)$", makefile, re.M)[1]
    listed = continued.replace("\\", " ").split()
    scripts = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))
    assert sorted(listed) == [s for s in scripts if s != "summary.py"]
    assert "bench/summary.py $(BENCH_RESULTS) $(BENCHES)" in makefile


README = """# bench/

Method.

<!-- bench-table:start -->
| script | figure | value | target | verdict | date | commit |
|---|---|---|---|---|---|---|
| crawl.py | pages/s vs bare spider | x0.79 | >= x0.8 | STALE (was FAIL) | 2026-12-02 | b047626 |
| crawl.py | peak RSS | 190 MB | <= 300 MB | STALE (was PASS) | 2026-12-02 03:38 | b047626 |
| panel.py | /roots/<a \\| b> p95 | 61.0 ms | < 100 ms | PASS | 2026-12-01 | 2583b75 |
| slowweb.py | slow vs fast world | x0.40 | >= x0.7 | FAIL | 2026-12-02 22:06 | a3e82b4 |
<!-- bench-table:end -->

## The benchmarks
"""
HISTORY = """# bench/ history

<!-- bench-history: new runs go below this line -->

### 2026-12-01, an old run
"""


def a_row(script, figure, value, target, verdict, date="2026-12-05 10:00", commit="abc1234"):
    return dict(locals())


def run_summary(*args):
    return subprocess.run(
        [sys.executable, str(BENCH / "summary.py"), *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def table_rows(text: str) -> list[list[str]]:
    inside = text.split("<!-- bench-table:start -->")[1].split("<!-- bench-table:end -->")[0]
    return [
        [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        for line in inside.strip().splitlines()[2:]
    ]


def table_files(tmp_path, run: list[dict]):
    """A README and a HISTORY as the repository has them, and a run's results file."""
    readme, history = tmp_path / "README.md", tmp_path / "HISTORY.md"
    readme.write_text(README)
    history.write_text(HISTORY)
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in run))
    return readme, history, results


def test_a_run_replaces_its_rows_of_the_readme_table_and_keeps_the_others(tmp_path):
    run = [
        a_row("crawl.py", "pages/s vs bare spider", "x0.86", ">= x0.8", "PASS"),
        a_row("crawl.py", "pages/s vs the crawler before", "x1.20", ">= x1.0", "PASS"),
        a_row("slowweb.py --big", "slow vs fast world", "x0.80", ">= x0.75", "PASS"),
        a_row("crawl.py", "peak RSS", "180 MB", "<= 300 MB", "NO VERDICT"),
        a_row("cores.py", "pages/s, 2 workers vs 1", "x1.30", ">= x1.25", "PASS"),
    ]
    readme, history, results = table_files(tmp_path, run)

    run_summary("--update-readme", results, "--readme", readme, "--history", history)

    assert table_rows(readme.read_text()) == [
        [
            "crawl.py",
            "pages/s vs bare spider",
            "x0.86",
            ">= x0.8",
            "PASS",
            "2026-12-05 10:00",
            "abc1234",
        ],
        # a run without a verdict leaves the figure as it was
        [
            "crawl.py",
            "peak RSS",
            "190 MB",
            "<= 300 MB",
            "STALE (was PASS)",
            "2026-12-02 03:38",
            "b047626",
        ],
        [
            "crawl.py",
            "pages/s vs the crawler before",
            "x1.20",
            ">= x1.0",
            "PASS",
            "2026-12-05 10:00",
            "abc1234",
        ],
        [
            "panel.py",
            "/roots/<a \\| b> p95",
            "61.0 ms",
            "< 100 ms",
            "PASS",
            "2026-12-01",
            "2583b75",
        ],
        [
            "slowweb.py",
            "slow vs fast world",
            "x0.40",
            ">= x0.7",
            "FAIL",
            "2026-12-02 22:06",
            "a3e82b4",
        ],
        [
            "slowweb.py --big",
            "slow vs fast world",
            "x0.80",
            ">= x0.75",
            "PASS",
            "2026-12-05 10:00",
            "abc1234",
        ],
        [
            "cores.py",
            "pages/s, 2 workers vs 1",
            "x1.30",
            ">= x1.25",
            "PASS",
            "2026-12-05 10:00",
            "abc1234",
        ],
    ]
    assert readme.read_text().endswith("<!-- bench-table:end -->\n\n## The benchmarks\n")
    text = history.read_text()
    newest, older = text.index("### 2026-12-05 10:00, abc1234"), text.index("### 2026-12-01")
    assert newest < older
    assert "| crawl.py         | peak RSS" in text  # every row of the run, judged or not
    assert "4 PASS, 0 FAIL, 1 without a verdict" in text


def test_a_figure_under_its_target_is_a_fail_in_the_table(tmp_path):
    run = [
        # said PASS, but its median misses the target in the target's units
        a_row(
            "growth.py", "save_hosts names/s at 10M", "x0.85 (3,061 vs 3,603)", ">= x0.9", "PASS"
        ),
        a_row("crawl.py", "peak RSS", "310 MB", "<= 300 MB", "PASS"),
        # the script judged the unrounded 0.899: it prints x0.90 and stays a FAIL
        a_row("growth.py", "finish_many hosts/s at 10M", "x0.90", ">= x0.9", "FAIL"),
        # another unit than the target's: the script's word stands
        a_row("hostile.py", "css url( repeated", "0.0100 s, 0.1358 s: 13.6x", "<= 15x", "PASS"),
        a_row("crawl.py", "pages/s vs bare spider", "x0.86", ">= x0.8", "PASS"),
    ]
    readme, history, results = table_files(tmp_path, run)

    printed = run_summary(results, "--update-readme", "--readme", readme, "--history", history)

    verdicts = {(r[0], r[1]): r[4] for r in table_rows(readme.read_text())}
    assert verdicts[("growth.py", "save_hosts names/s at 10M")] == "FAIL"
    assert verdicts[("crawl.py", "peak RSS")] == "FAIL"
    assert verdicts[("growth.py", "finish_many hosts/s at 10M")] == "FAIL"
    assert verdicts[("hostile.py", "css url( repeated")] == "PASS"
    assert verdicts[("crawl.py", "pages/s vs bare spider")] == "PASS"
    assert "2 PASS, 3 FAIL, 0 without a verdict" in printed


def test_a_verdict_carries_the_date_the_commit_and_the_variant_of_its_run(tmp_path):
    results = tmp_path / "results.jsonl"
    script = tmp_path / "a_bench.py"
    script.write_text(A_SCRIPT.format(bench=str(BENCH)))
    env = {"BENCH_RESULTS": str(results), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, str(script), "--big", "--keep"], env=env, check=True)
    first = json.loads(results.read_text().splitlines()[0])
    assert first["script"] == "a_bench.py --big"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", first["date"])
    assert re.fullmatch(r"[0-9a-f]{7,}(\+dirty)?|unknown", first["commit"])

    results.unlink()
    env["BENCH_COMMIT"] = "1234567"
    subprocess.run([sys.executable, str(script)], env=env, check=True)
    assert json.loads(results.read_text().splitlines()[0])["commit"] == "1234567"


def test_the_readme_holds_one_table_the_tool_can_read():
    text = (BENCH / "README.md").read_text()
    rows = table_rows(text)
    assert rows and all(len(row) == 7 for row in rows)
    keys = [(row[0], row[1]) for row in rows]
    assert len(keys) == len(set(keys))
    listed = set(re.search(r"^BENCHES := (.*)$", makefile_text(), re.M)[1].split())
    assert {row[0].split()[0] for row in rows} <= listed
    assert (
        "<!-- bench-history: new runs go below this line -->" in (BENCH / "HISTORY.md").read_text()
    )


def makefile_text() -> str:
    """The Makefile, its continued lines joined."""
    return (PROJECT_ROOT / "Makefile").read_text().replace("\\\n", " ")
