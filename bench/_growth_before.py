"""bench/growth.py's other side (`--before`): the same writes by 8751fd6's code, side by side.

BEFORE (the commit bench/_crawl_runs.py names) is unpacked with `git archive`; its schema
is migrated by its own CLI on a database of its own (`growth_before`, on the same server:
the same server settings) and loaded by its own bench/_growth_data.py (fitted to its schema:
keys on hostname alone, its triggers). Each round of a stage runs growth.py's claims and
writes on our database, and the same measurement of BEFORE's own bench/growth.py (the same
batches: the same generator with the same seed) in a process of its own that imports
only BEFORE's tree. The rounds alternate which side goes first, and each side's round runs
with the machine's page cache holding its database and not the other's
(bench/_page_cache.py: the same room; at 10M the two do not fit together).

This file is also that process (`python bench/_growth_before.py TREE URL load|measure
...`): it imports nothing of ours, so the old tree's modules are the ones found.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

# The figures compared, and which way is better (a rate higher, a time lower).
FIGURES = {
    "claims/s": "rate",
    "finish_many hosts/s": "rate",
    "save_hosts names/s": "rate",
    "trap-window write µs/outcome": "time",
}
RATE_TARGET, TIME_TARGET = 0.9, 1.1  # ours / BEFORE's: a rate no lower, a time no higher
DATABASE = "growth_before"
ANSWER = "growth-before: "  # the line that answers a command (the rest is its log)


class Before:
    """BEFORE's code on its own database of the server at `url`."""

    def __init__(self, url: str, work: Path) -> None:
        from _crawl_runs import BEFORE, PROJECT_ROOT
        from sqlalchemy import create_engine, text
        from sqlalchemy.engine import make_url

        self.commit = BEFORE
        self.missed: list[str] = []
        self.tree = work / "growth-before"
        self.tree.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "archive", BEFORE], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(self.tree)], input=archive.stdout, check=True)
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {DATABASE}"))
        admin.dispose()
        self.url = make_url(url).set(database=DATABASE).render_as_string(hide_password=False)
        self.admin_url, self.ours = url, make_url(url).database
        self.env = {**os.environ, "DATABASE_URL": self.url, "PYTHONPATH": str(self.tree)}

        migrated = subprocess.run(
            [sys.executable, "-m", "crawler.cli", "db", "upgrade"],
            cwd=self.tree,
            env=self.env,
            capture_output=True,
            text=True,
        )
        if migrated.returncode != 0:
            sys.exit(f"{BEFORE}'s db upgrade failed:\n{migrated.stderr[-3000:]}")
        # One process for the whole run, as ours is one (its caches as warm as ours).
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(self.tree), self.url],
            cwd=self.tree,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _ask(self, *command: object) -> str:
        self.process.stdin.write(" ".join(map(str, command)) + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith(ANSWER):
                return line.removeprefix(ANSWER)
        sys.exit(f"{self.commit}'s side exited {self.process.wait()} on {command}")

    def load(self, roots: tuple[int, int], audit: tuple[int, int], entries: bool) -> str:
        """The same rows as growth.py's load, by BEFORE's loader; one line saying how long."""
        return json.loads(self._ask("load", *roots, *audit, int(entries)))

    def measure(self, roots: int, tag: str) -> dict[str, float]:
        """One round of BEFORE's claims and writes: {figure: value}."""
        return json.loads(self._ask("measure", roots, tag))

    def profile(self, roots: int, tag: str) -> list[dict]:
        """BEFORE's batches of one finish_many and one save_hosts, profiled
        (bench/_growth_profile.py), on a page cache that holds its database."""
        self.hold("theirs")
        return json.loads(self._ask("profile", roots, tag))

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)

    def hold(self, side: str) -> None:
        """Give the page cache to one side's database ("ours" or "theirs") before its round."""
        from _page_cache import hold_only

        keep, drop = (self.ours, DATABASE) if side == "ours" else (DATABASE, self.ours)
        print(f"# page cache for {side}: {hold_only(self.admin_url, keep, [drop])}", flush=True)

    def rounds(self, ours, roots: int, tag: str, figures: dict, n: int) -> None:
        """`figures` (ours, just measured after `hold("ours")`) and n - 1 more rounds of
        ours (`ours(tag)`) against n of BEFORE's, alternating which goes first, each side's
        round on a page cache that holds its database; then the comparison."""
        mine, theirs = [figures], [self.round_of_theirs(roots, tag)]
        for k in range(1, n):
            round_tag = f"{tag}r{k}"
            if k % 2:
                theirs.append(self.round_of_theirs(roots, round_tag))
                mine.append(self.round_of_ours(ours, round_tag))
            else:
                mine.append(self.round_of_ours(ours, round_tag))
                theirs.append(self.round_of_theirs(roots, round_tag))
        return mine, theirs

    def round_of_ours(self, ours, tag: str) -> dict:
        self.hold("ours")
        return ours(tag)

    def round_of_theirs(self, roots: int, tag: str) -> dict:
        self.hold("theirs")
        return self.measure(roots, tag)

    def compare(self, size: str, mine: list[dict], theirs: list[dict], judge: bool) -> None:
        """Print each figure's median over the rounds, ours against BEFORE's, and the ratio
        (ours / BEFORE's) with its verdict (`judge` False: a diagnostic); a miss is kept
        in self.missed."""
        from _common import verdict

        for label, kind in FIGURES.items():
            now = statistics.median(r[label][0] for r in mine)
            then = statistics.median(r[label] for r in theirs)
            ratio = now / then
            ok = ratio >= RATE_TARGET if kind == "rate" else ratio <= TIME_TARGET
            target = f">= x{RATE_TARGET}" if kind == "rate" else f"<= x{TIME_TARGET}"
            value = f"x{ratio:.2f} ({now:,.1f} vs {then:,.1f})"
            figure = f"{label} at {size}, ours vs {self.commit}"
            word = verdict(ok, figure, value, target) if judge else "(diagnostic)"
            print(
                f"{label} at {size}: ours {now:,.1f}, {self.commit} {then:,.1f} (ratio"
                f" {ratio:.2f}, target {target}; medians of {len(mine)} rounds) {word}",
                flush=True,
            )
            if judge and not ok:
                self.missed.append(f"{label} vs {self.commit}")


# -- the process on BEFORE's side --------------------------------------------------------------


def worker(tree: str, url: str) -> None:
    """Answer the commands on stdin ("load LO HI AUDIT_LO AUDIT_HI ENTRIES", "measure ROOTS
    TAG") by BEFORE's own modules, one ANSWER line (JSON) each, until stdin closes."""
    # BEFORE's bench and tree first, in place of ours (this file's folder).
    sys.path[0:1] = [str(Path(tree) / "bench"), tree]
    import _growth_data
    import growth

    sys.path.append(str(Path(__file__).parent))  # after theirs: only our profiler is new
    from _growth_profile import profile_writes
    from sqlalchemy import create_engine

    engine = create_engine(url, pool_size=2)
    for line in sys.stdin:
        mode, *args = line.split()
        if mode == "load":
            lo, hi, audit_lo, audit_hi, entries = map(int, args)
            answer = _growth_data.load(engine, (lo, hi), (audit_lo, audit_hi), bool(entries))
        elif mode == "profile":
            answer = profile_writes(growth, engine, int(args[0]), args[1])
        else:
            figures, hosts = growth.measure_claims(url)
            writes, _ = growth.measure_writes(engine, hosts, int(args[0]), args[1])
            figures.update(writes)
            answer = {label: value for label, (value, _) in figures.items()}
        print(ANSWER + json.dumps(answer), flush=True)
    engine.dispose()


if __name__ == "__main__":
    worker(*sys.argv[1:])
