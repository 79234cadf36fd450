"""One database in the machine's memory at a time: the room a side-by-side comparison gives.

bench/growth.py --before keeps two databases of 10M hosts (ours and 8751fd6's, each about
10 GB) on one server of a 24 GB machine. Together they do not fit in the page cache, so a
round ran on whatever pages the other side's round had left, and the ratio measured which
side the cache favoured (a batch's UPDATE 56 ms on cold pages, 5.7 ms on warm ones). Before
each side's round, `hold_only` gives the machine's memory to that side: it checkpoints
(dirty pages written, so the kernel can let them go), tells the kernel it will not need the
other databases' files (POSIX_FADV_DONTNEED) and reads this one's files through once, so the
round runs on a cached database, as on a server whose memory holds its data.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

CHUNK = 1 << 20


def database_files(conn, database: str) -> list[Path]:
    """The files of `database`'s relations (the folder base/<its oid> of the server)."""
    data = conn.execute(text("SHOW data_directory")).scalar_one()
    oid = conn.execute(
        text("SELECT oid FROM pg_database WHERE datname = :name"), {"name": database}
    ).scalar_one()
    return sorted(p for p in (Path(data) / "base" / str(oid)).iterdir() if p.is_file())


def forget(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_through(path: Path) -> int:
    """Read the whole file (into the page cache); its size."""
    size = 0
    with path.open("rb", buffering=0) as file:
        while chunk := file.read(CHUNK):
            size += len(chunk)
    return size


def hold_only(url: str, keep: str, drop: list[str]) -> str:
    """Leave `keep`'s files in the page cache and not `drop`'s; one line saying what it did.

    `url`: a superuser's connection to the server holding all of them."""
    began = time.perf_counter()
    engine = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with engine.connect() as conn:
        conn.execute(text("CHECKPOINT"))
        dropped = [path for name in drop for path in database_files(conn, name)]
        kept = database_files(conn, keep)
    engine.dispose()
    for path in dropped:
        if path.exists():  # a relation dropped since the listing has no pages to let go
            forget(path)
    read = sum(read_through(path) for path in kept if path.exists())
    took = time.perf_counter() - began
    return f"{keep}: {read / 2**30:.1f} GB read in {took:.0f} s, {', '.join(drop)} let go"
