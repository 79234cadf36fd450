"""Bulk writes of an operator's lists: names by the hundred thousand, a batch at a time;
seeds here. (The crawl's own many small writes are gathered by crawler/utils/batcher.py.)

Names are normalized, deduplicated and refused in Python with the core's rules,
then COPYed into a temporary staging table, and each write is one
INSERT/UPDATE ... SELECT over the stage. Each batch is one transaction: a kill
leaves whole batches only, and a rerun answers "already" for what was written.
Every write locks rows in hostname order, as every bulk write here does.

Seeds are written here; deny entries (one name or a million) by crawler.db.rules.deny_entries
on the same stage. Results come per batch, in input order, as EntryChange.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import TypeVar

from sqlalchemy import Connection, Engine, TextClause, text

from crawler.core.hostnames import (
    HostnameError,
    local_suffixes,
    root,
    shown,
)
from crawler.core.seed_checks import Checked, check_seeds
from crawler.db.crawl import rollups
from crawler.db.operators import bulk_pool
from crawler.db.server.retry import retry_conflicts
from crawler.db.server.sql_pieces import names_param
from crawler.db.server.statistics import analyze_after_bulk_write


@dataclass(frozen=True)
class EntryChange:
    """The result of one operator input: what was stored, or why not."""

    input: str
    hostname: str | None
    status: str  # added | already | removed | absent | refused | queued | unblocked
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "refused"

    def describe(self) -> str:
        if self.hostname is None:
            return f"{shown(self.input)}: {self.message}"
        stored = self.hostname if self.input == self.hostname else f"{self.input} → {self.hostname}"
        return f"{stored}: {self.status}" + (f" ({self.message})" if self.message else "")


BATCH = 20_000
# Seed batches written at once: two keep two of the database's cores inserting (a batch
# is CPU-bound in Postgres: ~16 index entries a name). Their rows are disjoint but for
# repeats, which wait on each other's insert as any two writers' do.
SEED_WRITERS = 2
REPEATED = "repeated in this list"

Item = str | tuple[str, str | None]  # a value, or (value, its own note)

STAGE = """
    CREATE TEMP TABLE IF NOT EXISTS bulk_names (
        hostname text COLLATE "C" NOT NULL, root text COLLATE "C", note text
    ) ON COMMIT DELETE ROWS
"""
# The nearest entry over each staged name. A join, not a LATERAL with LIMIT: Citus runs
# it on a cluster (the staged names go to each shard) and plans no LIMIT in a lateral.
DENIED = text(
    """
    SELECT DISTINCT ON (s.hostname) s.hostname, d.hostname AS entry, d.status_reason AS rule
      FROM bulk_names s
      JOIN hosts d ON d.hostname = ANY(host_parents(s.hostname))
     WHERE d.status_reason IS NOT NULL
     ORDER BY s.hostname, length(d.hostname) DESC
    """
)
UNSTAGE = text("DELETE FROM bulk_names WHERE hostname = ANY(:names)").bindparams(
    *names_param("names")
)
# The staged names not yet known, dateless (a deny entry's own rows).
INSERT_HOSTS = text(
    """
    INSERT INTO hosts (hostname, root)
    SELECT hostname, root FROM bulk_names ORDER BY hostname
    ON CONFLICT (hostname, root) DO NOTHING
    RETURNING hostname, root
    """
)
# The staged names as seeds: new ones due now, and a known dateless row (its entry went)
# dated. `new`: the row was inserted, not found (xmax 0).
SEED_HOSTS = text(
    """
    INSERT INTO hosts (hostname, root, next_claim_at)
    SELECT hostname, root, now() FROM bulk_names ORDER BY hostname
    ON CONFLICT (hostname, root) DO UPDATE SET next_claim_at = excluded.next_claim_at
     WHERE hosts.next_claim_at IS NULL AND hosts.status_reason IS NULL
    RETURNING hostname, root, xmax = 0 AS new,
              CASE WHEN denied_by IS NULL THEN next_claim_at END
    """
)


@dataclass
class Batch:
    """One batch of inputs: their results in order, and the names to write (first seen).

    A name given again gets its first result when that was a refusal, else
    `repeated` ("already": it was written once, by its first line).
    """

    repeated: str = "already"
    inputs: list[str] = field(default_factory=list)
    results: list[EntryChange | None] = field(default_factory=list)
    first: dict[str, int] = field(default_factory=dict)  # hostname -> index of its input
    notes: dict[str, str | None] = field(default_factory=dict)
    roots: dict[str, str] = field(default_factory=dict)  # when known before staging
    repeats: list[tuple[int, str]] = field(default_factory=list)

    def take(self, value: str, hostname: str, note: str | None, root: str | None = None) -> None:
        """A valid name: staged the first time, settled like it after that."""
        self.inputs.append(value)
        self.results.append(None)
        if hostname in self.first:
            self.repeats.append((len(self.results) - 1, hostname))
            return
        self.first[hostname] = len(self.results) - 1
        self.notes[hostname] = note
        if root is not None:
            self.roots[hostname] = root

    def refuse(self, value: str, reason: str) -> None:
        self.inputs.append(value)
        self.results.append(EntryChange(value, None, "refused", reason))

    def settle(self, hostname: str, status: str, message: str = "") -> None:
        i = self.first[hostname]
        self.results[i] = EntryChange(self.inputs[i], hostname, status, message)

    def done(self) -> list[EntryChange]:
        for i, hostname in self.repeats:
            first = self.results[self.first[hostname]]
            refused = first is not None and first.status == "refused"
            status, why = ("refused", first.message) if refused else (self.repeated, REPEATED)
            self.results[i] = EntryChange(self.inputs[i], hostname, status, why)
        return [r for r in self.results if r is not None]


T = TypeVar("T")
# Inputs handled between two pauses of a long loop in Python (see `paced`).
PACE = 250


def paced(items: Iterable[T], every: int = PACE) -> Iterator[T]:
    """`items`, pausing with sleep(0) after every `every` of them under gevent.

    Under the panel's gevent workers (gunicorn.conf.py) a request runs alone until it
    waits: 10,000 names normalized in one go held every other request of the process
    for a third of a second. gevent's sleep(0) lets them run. Elsewhere (the CLI) a
    pause only hands the GIL to the thread writing the last batch, or the CPU away.
    """
    if not cooperative():
        yield from items
        return
    for n, item in enumerate(items, 1):
        yield item
        if n % every == 0:
            time.sleep(0)


def cooperative() -> bool:
    """True in a process gevent has patched (the panel's workers): where pauses matter."""
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and monkey.is_module_patched("time")


def batches(items: Iterable[Item], size: int) -> Iterator[list[tuple[str, str | None]]]:
    """(value, note) lists of `size` items (a bare value has no note of its own)."""
    pairs = ((i, None) if isinstance(i, str) else i for i in items)
    while chunk := list(islice(pairs, size)):
        yield chunk


def no_refusal(hostname: str) -> None:
    """Deny entries and removals refuse nothing beyond normalize()'s rules."""


def prepare(
    chunk: list[tuple[str, str | None]],
    name_of: Callable[[str], str],
    refusal: Callable[[str], str | None],
    note: str | None,
    repeated: str,
) -> Batch:
    """Normalize and check each input in Python; the rest of the batch is the database's."""
    batch = Batch(repeated)
    for value, own_note in paced(chunk):
        try:
            hostname = name_of(value)
        except HostnameError as exc:
            batch.refuse(value, exc.reason)
            continue
        why = refusal(hostname)
        if why:
            batch.refuse(value, why)
            continue
        batch.take(value, hostname, own_note if own_note is not None else note)
    return batch


def stage(conn: Connection, batch: Batch, with_roots: bool = True) -> None:
    """COPY the batch's names (first seen) into bulk_names, for this transaction."""
    conn.execute(text(STAGE))
    # One buffer, one write: row by row, each flush gave the GIL away and this thread
    # waited up to a switch interval (5 ms) to get it back from the one preparing.
    known = batch.roots
    rows = "".join(
        f"{hostname}\t{(known.get(hostname) or root(hostname)) if with_roots else NULL}"
        f"\t{copy_text(note)}\n"
        for hostname, note in paced(batch.notes.items())
    )
    with (
        conn.connection.driver_connection.cursor() as cursor,
        cursor.copy("COPY bulk_names (hostname, root, note) FROM STDIN") as copy,
    ):
        copy.write(rows.encode())
    conn.execute(text("ANALYZE bulk_names"))


NULL = "\\N"
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def copy_text(value: str | None) -> str:
    """A value in COPY's text format (a normalized hostname never needs escaping)."""
    return NULL if value is None else value.translate(_COPY_ESCAPES)


def insert_staged_hosts(conn: Connection, pending: rollups.Rollups | None = None) -> dict[str, str]:
    """The staged names not yet known, as dateless hosts rows (counted in their roots and
    hour): {hostname: root}. `pending`: counted there, for the caller to write after its
    row locks."""
    new = dict(tuples(conn, INSERT_HOSTS))
    count_new(conn, new, pending=pending)
    return new


def count_new(
    conn: Connection,
    new: dict[str, str],
    due_now: bool = False,
    pending: rollups.Rollups | None = None,
) -> None:
    """New hosts ({hostname: root}) in their roots and hour. `due_now`: they are queued
    due now (count_hosts). `pending`: counted there, for the caller to write."""
    if pending is not None:
        pending.count_hosts(new=new.values())
        pending.count_hours(discovered=len(new))
        return
    rollups.count_hosts(conn, new=new.values(), due_now=due_now)
    rollups.count_hours(conn, discovered=len(new))
    rollups.count_sources(conn, (None for _ in new))  # a seed or an entry: no source


def tuples(conn: Connection, statement: TextClause) -> list[tuple]:
    """A statement's rows as the driver's tuples, fetched at once: a row a name, and
    SQLAlchemy's Row objects took seven times the driver's time (35 ms a batch of 20,000)."""
    return conn.execute(statement).cursor.fetchall()


def refuse_denied(conn: Connection, batch: Batch) -> None:
    """Names under a deny entry (the entry itself included) are refused and unstaged."""
    denied = conn.execute(DENIED).all()
    for hostname, entry, rule in denied:
        batch.settle(hostname, "refused", f"under {rule} entry {entry}")
    if denied:
        conn.execute(UNSTAGE, {"names": [h for h, _, _ in denied]})


# -- seeds -------------------------------------------------------------------------------


def seed(
    engine: Engine,
    items: Iterable[Item],
    *,
    allow_private: bool = False,
    force: bool = False,
    size: int = BATCH,
    workers: int = 0,
) -> Iterator[list[EntryChange]]:
    """Queue operator-given hostnames, a batch at a time; each batch's results in order.

    Refused: malformed names, names that are no crawlable host (seed_refusal()),
    names under a deny entry. Queued: new hosts; already: known before. `workers`:
    processes that check the names (crawler.db.operators.bulk_pool; 0: this one), for a big list.
    """
    # LOCAL_SUFFIXES once for the list, not once a name (and the workers get this one).
    check = partial(check_seeds, allow_private=allow_private, force=force, local=local_suffixes())
    work = check if workers > 1 else partial(_checked_here, check)
    prepared = (
        _seed_batch(chunk, checked)
        for chunk, checked in bulk_pool.in_order(batches(items, size), work, workers, _values)
    )
    written: list[int] = []  # names each batch wrote (appended by the writers' threads)

    def write(batch: Batch) -> None:
        _write_seeds(engine, batch)
        written.append(len(batch.first))

    yield from overlapped(prepared, write, SEED_WRITERS)
    # Once, after the last batch: an ANALYZE after each batch of a million-name list took
    # a tenth of its time (the tables double with each early batch, so each was stale).
    analyze_after_bulk_write(engine, sum(written))


def _values(chunk: list[tuple[str, str | None]]) -> list[str]:
    return [value for value, _ in chunk]


def _checked_here(
    check: Callable[[Iterable[str]], list[Checked]], values: list[str]
) -> list[Checked]:
    """check(values) in this process, pausing as `paced` does."""
    return check(paced(values))


def _seed_batch(chunk: list[tuple[str, str | None]], checked: list[Checked]) -> Batch:
    """The batch of a chunk of inputs, given each one's check (hostname and root, or why
    it is refused)."""
    batch = Batch("already")
    for (value, note), (hostname, root_or_why) in zip(chunk, checked, strict=True):
        if hostname is None:
            batch.refuse(value, root_or_why)
        else:
            batch.take(value, hostname, note, root_or_why)
    return batch


def overlapped(
    prepared: Iterator[Batch], write: Callable[[Batch], None], writers: int = 1
) -> Iterator[list]:
    """Write batches in `writers` threads while the next one is prepared; results in order.

    The database works while Python normalizes; with two writers, on two of its cores.
    Each batch is still its own transaction, and none is started once one is known to
    have failed (with several writers, those already started may commit: each whole).
    """
    with ThreadPoolExecutor(writers, thread_name_prefix="bulk-write") as pool:
        pending: deque[tuple[Batch, Future | None]] = deque()
        for batch in prepared:  # prepared while the pending batches are written
            # The oldest finished (raises if it failed) before this one takes its writer.
            done = [_finished(*pending.popleft()) for _ in range(len(pending) - writers + 1)]
            pending.append((batch, pool.submit(write, batch) if batch.first else None))
            yield from done
        while pending:
            yield _finished(*pending.popleft())


def _finished(batch: Batch, running: Future | None) -> list[EntryChange]:
    if running is not None:
        running.result()
    return batch.done()


@retry_conflicts
def _write_seeds(engine: Engine, batch: Batch) -> None:
    with engine.begin() as conn:
        # A crash of the server may lose the last batches it said were committed (never
        # half of one); a rerun of the list queues them then. Not worth a disk flush each.
        conn.execute(text("SET LOCAL synchronous_commit = off"))
        stage(conn, batch)
        refuse_denied(conn, batch)
        written = tuples(conn, SEED_HOSTS)
        new = {hostname: root for hostname, root, is_new, _ in written if is_new}
        count_new(conn, new, due_now=True)
        # The new hosts' roots are due now already; only known hosts re-dated may lower more.
        lowered = set(new.values())
        rollups.lower_next_due(conn, ((r, due) for _, r, _, due in written if r not in lowered))
    for hostname, i in batch.first.items():
        if batch.results[i] is None:
            batch.settle(hostname, "queued" if hostname in new else "already")


def collect(batches: Iterable[list[EntryChange]]) -> list[EntryChange]:
    """Every batch's results in one list (for callers that take at most a few batches)."""
    return [change for batch in batches for change in batch]
