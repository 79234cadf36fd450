"""What this machine has: its cores (those this process may run on) and its memory (the
container's limit when lower), the inputs of the worker count and of the embedded
server's sizes (crawler/core/worker_count.py, crawler/core/server_advice.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from crawler.core import config

MB = 1024 * 1024
CGROUP = Path("/sys/fs/cgroup")


def cores() -> int:
    return len(os.sched_getaffinity(0))


def worker_count(environ: Mapping[str, str] | None = None) -> int:
    """CRAWL_WORKERS as a number on this machine (`auto`: by its cores)."""
    environ = os.environ if environ is None else environ
    return config.from_environment("CRAWL_WORKERS", environ).effective(cores())


def memory_mb() -> int:
    """The machine's memory in MB, or its cgroup's limit when that is lower (a container
    sees the host's /proc/meminfo)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limits = [limit for limit in map(read_limit, cgroup_limit_files()) if limit]
    return min([total, *limits]) // MB


def cgroup_limit_files() -> list[Path]:
    """Where this process's memory limit may be written: cgroup v2 (its own group, then the
    root a container sees) and cgroup v1."""
    files = [CGROUP / "memory.max", CGROUP / "memory" / "memory.limit_in_bytes"]
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                files.insert(0, CGROUP / line[3:].lstrip("/") / "memory.max")
    except OSError:
        pass
    return files


def read_limit(path: Path) -> int | None:
    """The limit in bytes written in `path`; None when absent or `max` (no limit)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdecimal() else None
