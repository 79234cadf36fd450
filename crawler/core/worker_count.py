"""How many crawler workers `make run` starts (setting CRAWL_WORKERS), and their names. Pure.

`auto` follows bench/cores.py's measurement on the embedded database: per page, a
worker spends WORKER_SHARE of the CPU that a page costs the worker and the database
together, so `cores * WORKER_SHARE` workers keep every core busy and leave the
database the rest (docs/scaling.md, "Workers per machine").
"""

from __future__ import annotations

#: A worker's part of the CPU per page (worker + embedded database), from bench/cores.py.
WORKER_SHARE = 0.9
AUTO = "auto"


class WorkerCount(str):
    """CRAWL_WORKERS as written: `auto` or a whole number >= 1 (ValueError otherwise)."""

    expected = "auto or a whole number >= 1"

    def __new__(cls, text: str) -> WorkerCount:
        word = text.strip().lower()
        if word != AUTO and not (word.isdecimal() and int(word) >= 1):
            raise ValueError(text)
        return super().__new__(cls, word)

    def effective(self, cores: int) -> int:
        """The number of workers on a machine of `cores` CPUs."""
        if self == AUTO:
            return max(1, round(cores * WORKER_SHARE))
        return int(self)


def worker_name(index: int, host: str) -> str:
    """The name of `make run`'s index-th worker (1, 2, ...) on `host`: unique across
    machines that share one database, and the same for a worker restarted in its place."""
    return f"worker-{index}@{host}"
