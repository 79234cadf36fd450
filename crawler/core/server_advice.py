"""The Postgres server settings docs/scaling.md advises ("What to tune first"), and how each
is sized from the machine. Pure: the machine's memory and a server's values are passed in.

The embedded server gets them on every start (crawler/db/server/server_settings.py); a server
behind DATABASE_URL is its owner's, and `hostcrawl db status` names those of its settings
that fall short (`shortfalls`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from crawler.core.words import counted

MB = 1024 * 1024
MINUTE = 60
#: Postgres's own default shared_buffers: a server still at it was never given memory.
DEFAULT_SHARED_BUFFERS = 128 * MB
#: The least memory `auto` sizes the embedded server for: what Postgres's defaults assume
#: (128 MB of shared_buffers is a quarter of it), whatever the workers keep.
MIN_AUTO_MEMORY_MB = 512
#: wal_compression methods cheaper than pglz, in order of preference; only if the server
#: was built with them (the embedded build has only pglz, which slowed writes on 2 cores).
FAST_WAL_COMPRESSION = ("lz4", "zstd")

BYTES, SECONDS, WORD = "bytes", "seconds", "word"


@dataclass(frozen=True)
class Advice:
    """One advised setting: how it is sized from the memory given to the server (in MB)."""

    name: str
    kind: str  # BYTES, SECONDS or WORD
    sized: Callable[[int], int]  # memory MB -> the value in bytes or seconds
    why: str  # a few words: what it buys
    at_most: bool = False  # a smaller value is better (autovacuum_naptime)
    restart: bool = False  # takes effect only when the server starts
    judged: bool = True  # `db status` judges a server of its own by it


ADVICE: tuple[Advice, ...] = (
    Advice(
        "shared_buffers",
        BYTES,
        lambda memory: max(16, memory // 4) * MB,
        "keeps the hot indexes in Postgres's memory for claims and finishes",
        restart=True,
        judged=False,  # by the database's indexes instead: the server's memory is unknown
    ),
    Advice(
        "effective_cache_size",
        BYTES,
        lambda memory: max(16, memory * 3 // 4) * MB,
        "tells the planner the OS cache holds the rest",
        judged=False,  # a planner hint sized from a memory `db status` cannot see
    ),
    Advice(
        "maintenance_work_mem",
        BYTES,
        lambda memory: 256 * MB,
        "one pass over the indexes per vacuum",
    ),
    Advice(
        "autovacuum_naptime",
        SECONDS,
        lambda memory: 10,
        "the queue's dead rows pile up between two looks of autovacuum",
        at_most=True,
    ),
    Advice(
        "checkpoint_timeout",
        SECONDS,
        lambda memory: 15 * MINUTE,
        "fewer full-page images in the WAL: one serves more writes of its page",
    ),
    Advice(
        "max_wal_size",
        BYTES,
        lambda memory: 4096 * MB,
        "checkpoints come by time, not by the WAL's size",
    ),
)
BY_NAME = {advice.name: advice for advice in ADVICE}
NAMES = (*BY_NAME, "wal_compression")


@dataclass(frozen=True)
class Memory:
    """The memory the embedded server is sized for, and where the figure came from."""

    mb: int
    machine_mb: int
    workers: int
    worker_mb: int
    chosen: bool  # EMBEDDED_DATABASE_MEMORY_MB set, rather than auto

    def describe(self) -> str:
        if self.chosen:
            return f"{size(self.mb * MB)} (EMBEDDED_DATABASE_MEMORY_MB)"
        workers = counted(self.workers, "worker")
        return (
            f"{size(self.mb * MB)} ({size(self.machine_mb * MB)} of memory less {workers}"
            f" × MEMORY_BUDGET_MB {self.worker_mb} MB)"
        )


def database_memory(machine_mb: int, workers: int, worker_mb: int, wanted_mb: int) -> Memory:
    """What the embedded server is sized for: `wanted_mb` when set (not 0), else the
    machine's memory less what the crawler workers keep, never below MIN_AUTO_MEMORY_MB."""
    if wanted_mb:
        return Memory(wanted_mb, machine_mb, workers, worker_mb, chosen=True)
    left = max(MIN_AUTO_MEMORY_MB, machine_mb - workers * worker_mb)
    return Memory(left, machine_mb, workers, worker_mb, chosen=False)


@dataclass(frozen=True)
class Current:
    """A server's value of one setting (bytes, seconds or a word) and the words it offers."""

    value: int | str
    offered: tuple[str, ...] = ()


def embedded_settings(memory_mb: int, offered: Mapping[str, Current]) -> dict[str, int | str]:
    """Each advised setting's value for a server given `memory_mb`: bytes, seconds, or
    wal_compression's method when the server (`offered`) has a fast one."""
    values: dict[str, int | str] = {a.name: a.sized(memory_mb) for a in ADVICE}
    method = fast_compression(offered.get("wal_compression"))
    if method:
        values["wal_compression"] = method
    return values


def fast_compression(current: Current | None) -> str | None:
    found = current.offered if current else ()
    return next((method for method in FAST_WAL_COMPRESSION if method in found), None)


def needs_restart(name: str) -> bool:
    return name in BY_NAME and BY_NAME[name].restart


def alter_text(name: str, value: int | str) -> str:
    """The value as ALTER SYSTEM takes it: 6144MB, 900s, lz4."""
    kind = BY_NAME[name].kind if name in BY_NAME else WORD
    if kind == BYTES:
        return f"{value // MB}MB"
    if kind == SECONDS:
        return f"{value}s"
    return str(value)


def shown(name: str, value: int | str) -> str:
    """The value as an operator reads it: 5.8 GB, 15 min, lz4."""
    kind = BY_NAME[name].kind if name in BY_NAME else WORD
    if kind == BYTES:
        return size(value)
    if kind == SECONDS:
        return f"{value // MINUTE} min" if value % MINUTE == 0 else f"{value} s"
    return str(value)


def size(count: int) -> str:
    """Bytes as 256 MB or 5.8 GB."""
    if count >= 1024 * MB:
        return f"{count / (1024 * MB):.1f}".removesuffix(".0") + " GB"
    return f"{count // MB} MB"


def describe_embedded(memory: Memory, values: Mapping[str, int | str]) -> str:
    """The start-up line: what the embedded server was given, and for how much memory."""
    settings = ", ".join(f"{name} {shown(name, value)}" for name, value in values.items())
    return f"embedded Postgres sized for {memory.describe()}: {settings}"


@dataclass(frozen=True)
class Shortfall:
    """A server setting that falls short of docs/scaling.md's advice."""

    name: str
    current: str
    advised: str
    why: str

    def describe(self) -> str:
        return f"{self.name} {self.current}: advised {self.advised} ({self.why})"


def shortfalls(current: Mapping[str, Current], index_bytes: int) -> list[Shortfall]:
    """The settings of a server of its owner's that fall short of the advice (a setting
    the server does not report is left out). Memory is judged by `index_bytes`, the size of
    the database's indexes, since the server's own memory cannot be seen from here."""
    found = memory_shortfall(current.get("shared_buffers"), index_bytes)
    for advice in ADVICE:
        value = current.get(advice.name)
        if not advice.judged or value is None:
            continue
        advised = advice.sized(MIN_AUTO_MEMORY_MB)  # the fixed ones do not depend on it
        if value.value > advised if advice.at_most else value.value < advised:
            found.append(
                Shortfall(
                    advice.name,
                    shown(advice.name, value.value),
                    f"{'at most' if advice.at_most else 'at least'} {shown(advice.name, advised)}",
                    advice.why,
                )
            )
    return found + compression_shortfall(current.get("wal_compression"))


def memory_shortfall(buffers: Current | None, index_bytes: int) -> list[Shortfall]:
    """shared_buffers still at Postgres's default while the indexes outgrow it."""
    if buffers is None or buffers.value > DEFAULT_SHARED_BUFFERS or index_bytes <= buffers.value:
        return []
    advised = f"about a quarter of the server's memory (its indexes: {size(index_bytes)})"
    return [
        Shortfall("shared_buffers", size(buffers.value), advised, BY_NAME["shared_buffers"].why)
    ]


def compression_shortfall(compression: Current | None) -> list[Shortfall]:
    """wal_compression off (or pglz) on a server that has a cheaper method."""
    method = fast_compression(compression)
    if compression is None or method is None or compression.value in FAST_WAL_COMPRESSION:
        return []
    why = "smaller full-page images in the WAL, cheaply"
    return [Shortfall("wal_compression", str(compression.value), method, why)]


UNITS = {"B": 1, "kB": 1024, "8kB": 8192, "MB": MB, "s": 1, "min": MINUTE, "h": 3600}


def server_value(setting: str, unit: str | None) -> int | str:
    """pg_settings' `setting` in its `unit` as bytes or seconds (a word stays a word)."""
    if unit == "ms":
        return int(setting) // 1000
    if unit in UNITS:
        return int(setting) * UNITS[unit]
    return setting
