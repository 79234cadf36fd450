"""The table `make bench` ends with, and the current table of bench/README.md.

Each bench script passes its verdicts through `_common.verdict(ok, figure, value,
target)`, which appends them, with the date and the commit of the run, to the file named
by $BENCH_RESULTS. This reads that file and prints one table; a script named on the
command line that recorded nothing (it crashed, or does not record yet) gets a line of
its own. With --update-readme it also puts the run's figures into bench/README.md's
current table (a row per script and figure: the run's rows replace theirs, the others
stay) and adds the run's whole table to the top of bench/HISTORY.md.

    python bench/summary.py RESULTS_FILE [SCRIPT.py ...]
    python bench/summary.py --update-readme RESULTS_FILE

A PASS whose value misses its target (`x0.85` against `>= x0.9`) is a FAIL here,
whatever the script printed: a median under its target is a FAIL.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

COLUMNS = ("script", "figure", "value", "target", "verdict", "date", "commit")
BENCH = Path(__file__).resolve().parent
README = BENCH / "README.md"
HISTORY = BENCH / "HISTORY.md"
TABLE_START = "<!-- bench-table:start -->"
TABLE_END = "<!-- bench-table:end -->"
HISTORY_MARK = "<!-- bench-history: new runs go below this line -->"
JUDGED = ("PASS", "FAIL")
# A target that is one comparison with a number (">= x0.9", "< 100 ms", "<= 300 MB"), and
# the number a value starts with ("x0.87 (…)", "249,621 links/s", "98.74%"), each with
# its "x" and its unit: the two are compared only when the units agree.
COMPARISON = re.compile(r"^(>=|<=|<|>)\s*(x?)([0-9][0-9,]*(?:\.[0-9]+)?)\s*([^\s,;()]*)")
NUMBER = re.compile(r"^(x?)([0-9][0-9,]*(?:\.[0-9]+)?)\s*([^\s,;()]*)")
CELL_BREAK = re.compile(r"(?<!\\)\|")


def read(path: Path) -> list[dict]:
    """The results file's rows, each judged again (`judged`); an older file's rows
    without a date or commit get "-"."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [judged(dict.fromkeys(COLUMNS, "-") | row) for row in rows]


def judged(row: dict) -> dict:
    """The row, a FAIL if it says PASS while its value misses a numeric target in the
    same units (a PASS never rounds into a miss: the scripts judge the unrounded value)."""
    target = COMPARISON.match(str(row["target"]).strip())
    value = NUMBER.match(str(row["value"]).strip())
    if row["verdict"] != "PASS" or not (target and value) or not same_units(target, value):
        return row
    op, limit = target[1], float(target[3].replace(",", ""))
    number = float(value[2].replace(",", ""))
    meets = {">=": number >= limit, "<=": number <= limit, "<": number < limit, ">": number > limit}
    return row if meets[op] else row | {"verdict": "FAIL"}


def same_units(target: re.Match, value: re.Match) -> bool:
    """ "x0.9" against "x0.87", "/s" against "links/s", a bare target against anything."""
    times = not target[2] or target[2] == value[1]
    return times and (not target[4] or value[3].endswith(target[4]))


def table(rows: list[dict]) -> str:
    """A Markdown table, columns aligned (it reads as plain text too)."""
    widths = {c: max([len(c)] + [len(cell(r[c])) for r in rows]) for c in COLUMNS}
    lines = [
        "| " + " | ".join(c.ljust(widths[c]) for c in COLUMNS) + " |",
        "|" + "|".join("-" * (widths[c] + 2) for c in COLUMNS) + "|",
    ]
    lines += ["| " + " | ".join(cell(r[c]).ljust(widths[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def cell(value) -> str:
    return str(value).replace("|", "\\|")


def counts_line(rows: list[dict]) -> str:
    counts = {word: sum(r["verdict"] == word for r in rows) for word in JUDGED}
    others = len(rows) - sum(counts.values())
    return f"{counts['PASS']} PASS, {counts['FAIL']} FAIL, {others} without a verdict"


def with_missing(rows: list[dict], scripts: list[str]) -> list[dict]:
    """`rows`, and a MISSING row for each script that recorded nothing."""
    recorded = {r["script"].split()[0] for r in rows}
    missing = [Path(s).name for s in scripts if Path(s).name not in recorded]
    empty = dict.fromkeys(COLUMNS, "-")
    return rows + [empty | {"script": s, "verdict": "MISSING"} for s in missing]


def readme_rows(text: str, name: str) -> tuple[str, list[dict], str]:
    """The README's text before its current table, the table's rows, the text after."""
    if TABLE_START not in text or TABLE_END not in text:
        raise SystemExit(f"error: {name}: no {TABLE_START} … {TABLE_END} around its table")
    before, rest = text.split(TABLE_START, 1)
    inside, after = rest.split(TABLE_END, 1)
    rows = []
    for line in inside.strip().splitlines()[2:]:  # past the header and its rule
        cells = [c.strip().replace("\\|", "|") for c in CELL_BREAK.split(line.strip())[1:-1]]
        rows.append(dict(zip(COLUMNS, cells, strict=True)))
    return before, rows, after


def merged(current: list[dict], run: list[dict]) -> list[dict]:
    """`current` with each judged row of `run` in place of its (script, figure), a new
    figure after the last row of its script (or at the end); the other rows kept. A run
    without a verdict (a quick run) leaves the current figure."""
    rows = list(current)
    for new in (r for r in run if r["verdict"] in JUDGED):
        key = (new["script"], new["figure"])
        places = [i for i, r in enumerate(rows) if (r["script"], r["figure"]) == key]
        if places:
            rows[places[0]] = new
            continue
        same_script = [i for i, r in enumerate(rows) if r["script"] == new["script"]]
        rows.insert(same_script[-1] + 1 if same_script else len(rows), new)
    return rows


def readme_table(rows: list[dict]) -> str:
    """The README's table: one line a row, unaligned, so an update changes only its rows."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def update_readme(run: list[dict], readme: Path) -> None:
    before, current, after = readme_rows(readme.read_text(), str(readme))
    rows = merged(current, run)
    readme.write_text(f"{before}{TABLE_START}\n{readme_table(rows)}\n{TABLE_END}{after}")


def add_to_history(run: list[dict], history: Path) -> None:
    """The run's whole table (every row, a quick run's too) at the top of the history."""
    text = history.read_text()
    if HISTORY_MARK not in text:
        raise SystemExit(f"error: {history}: no {HISTORY_MARK} line")
    dates = sorted({r["date"] for r in run})
    commits = ", ".join(sorted({r["commit"] for r in run}))
    scripts = ", ".join(dict.fromkeys(f"`{r['script']}`" for r in run))
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    entry = f"### {when}, {commits}: {scripts}\n\n{table(run)}\n\n{counts_line(run)}\n"
    head, rest = text.split(HISTORY_MARK, 1)
    history.write_text(f"{head}{HISTORY_MARK}\n\n{entry}{rest}")


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/summary.py", description="The table of a bench run's figures."
    )
    parser.add_argument("results", type=Path, help="the $BENCH_RESULTS file of the run")
    parser.add_argument("scripts", nargs="*", help="scripts that should have recorded")
    parser.add_argument(
        "--update-readme",
        action="store_true",
        help="put the run's figures into bench/README.md's table and bench/HISTORY.md",
    )
    parser.add_argument("--readme", type=Path, default=README, help=argparse.SUPPRESS)
    parser.add_argument("--history", type=Path, default=HISTORY, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = arguments(argv)
    run = read(args.results)
    rows = with_missing(run, args.scripts)
    print(table(rows))
    print(f"\n{counts_line(rows)}")
    if args.update_readme:
        if not run:
            print(f"error: {args.results}: no figures recorded", file=sys.stderr)
            return 1
        update_readme(run, args.readme)
        add_to_history(run, args.history)
        print(f"\n{args.readme}: the current table; {args.history}: this run at the top")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
