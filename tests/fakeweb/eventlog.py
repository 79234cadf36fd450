"""JSON-lines event logs shared by the fakeweb server (writer) and handle (reader)."""

from __future__ import annotations

import json
import time
from pathlib import Path

HTTP_LOG = "http.jsonl"
DNS_LOG = "dns.jsonl"


class EventLog:
    """Appends one JSON object per line; each line is written with one write()."""

    def __init__(self, path: Path):
        """Open path for appending."""
        # Line buffering: every record reaches the file before the server
        # answers, so a client that got its answer can already count it.
        self._file = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115

    def write(self, **record) -> None:
        """Append a record, stamped with the current time as "t"."""
        record["t"] = time.time()
        self._file.write(json.dumps(record) + "\n")

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def read_events(path: Path) -> list[dict]:
    """All complete records in path (a half-written last line is skipped)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = data.split(b"\n")
    # The last element is b"" if the file ends in a newline, else a line
    # the server is still writing.
    return [json.loads(line) for line in lines[:-1] if line]
