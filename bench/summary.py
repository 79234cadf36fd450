"""The table `make bench` ends with: every figure, its target and its verdict.

Each bench script passes its verdicts through `_common.verdict(ok, figure, value,
target)`, which appends them to the file named by $BENCH_RESULTS. This reads that file
and prints one table; a script named on the command line that recorded nothing (it
crashed, or does not record yet) gets a line of its own.

    python bench/summary.py RESULTS_FILE [SCRIPT.py ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COLUMNS = ("script", "figure", "value", "target", "verdict")


def read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def table(rows: list[dict]) -> str:
    """A Markdown table (it reads as plain text too, and pastes into bench/README.md)."""
    widths = {c: max([len(c)] + [len(str(r[c])) for r in rows]) for c in COLUMNS}
    lines = [
        "| " + " | ".join(c.ljust(widths[c]) for c in COLUMNS) + " |",
        "|" + "|".join("-" * (widths[c] + 2) for c in COLUMNS) + "|",
    ]
    lines += ["| " + " | ".join(str(r[c]).ljust(widths[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    rows = read(Path(argv[0]))
    recorded = {r["script"] for r in rows}
    for script in argv[1:]:
        name = Path(script).name
        if name not in recorded:
            rows.append(dict.fromkeys(COLUMNS, "-") | {"script": name, "verdict": "MISSING"})
    print(table(rows))
    counts = {word: sum(r["verdict"] == word for r in rows) for word in ("PASS", "FAIL")}
    others = len(rows) - sum(counts.values())
    print(f"\n{counts['PASS']} PASS, {counts['FAIL']} FAIL, {others} without a verdict")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
