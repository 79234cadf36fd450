"""Bulk writes: seeds and deny entries by the hundred thousand.

Names are normalized, deduplicated and refused in Python with the core's rules,
then COPYed into a temporary staging table. The deny check is one SQL join of the
staged names against the entries above each (host_parents()), and each write one
INSERT/UPDATE ... SELECT over the stage. Each batch is one transaction: a kill
leaves whole batches only, and a rerun answers "already" for what was written.

Every write locks rows in hostname order, as every bulk write here does. A batch
of deny entries writes one change-log row (its count; the names in change_log_items) and
reaches running workers: a NOTIFY per name for a small batch, one "reload" for a
big one. Results come per batch, in input order, as EntryChange.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice

from sqlalchemy import Connection, Engine, text

from crawler.core.denylist import BLOCKED, NO_FOLLOW
from crawler.core.hostnames import HostnameError, normalize, normalize_entry, root, seed_refusal
from crawler.db.bulk_change_log import STAGED_NOTES, announce, record_batch
from crawler.db.deny_entries import FORGET_ENTRY_ONLY_ROWS, SYSTEM, EntryChange
from crawler.db.hostsql import names_param
from crawler.db.retry import retry_conflicts
from crawler.db.routing import NEAREST_ENTRY
from crawler.db.statistics import analyzes_after

BATCH = 20_000
REPEATED = "repeated in this list"
REMOVAL = {BLOCKED: ("unblock", "unblocked"), NO_FOLLOW: ("no_follow.remove", "removed")}

Item = str | tuple[str, str | None]  # a value, or (value, its own note)

STAGE = """
    CREATE TEMP TABLE IF NOT EXISTS bulk_names (
        hostname text COLLATE "C" NOT NULL, root text COLLATE "C", note text
    ) ON COMMIT DELETE ROWS
"""
DENIED = text(
    """
    SELECT s.hostname, e.hostname AS entry, e.status_reason AS rule
      FROM bulk_names s
     CROSS JOIN LATERAL (
           SELECT d.hostname, d.status_reason FROM queue d
            WHERE d.hostname = ANY(host_parents(s.hostname)) AND d.status_reason IS NOT NULL
            ORDER BY length(d.hostname) DESC LIMIT 1) e
    """
)
UNSTAGE = text("DELETE FROM bulk_names WHERE hostname = ANY(:names)").bindparams(
    *names_param("names")
)
INSERT_HOSTS = text(
    """
    INSERT INTO hosts (hostname, root)
    SELECT hostname, root FROM bulk_names ORDER BY hostname
    ON CONFLICT (hostname) DO NOTHING
    RETURNING hostname
    """
)
QUEUE_SEEDS = text(
    """
    INSERT INTO queue (hostname, root, next_claim_at)
    SELECT hostname, root, now() FROM bulk_names ORDER BY hostname
    ON CONFLICT (hostname) DO UPDATE SET next_claim_at = now()
     WHERE queue.next_claim_at IS NULL AND queue.status_reason IS NULL
    """
)
# New names become entries as they are inserted; existing rows are changed below.
INSERT_ENTRIES = text(
    """
    INSERT INTO queue (hostname, root, status_reason, note)
    SELECT hostname, root, 'no_follow', note FROM bulk_names ORDER BY hostname
    ON CONFLICT (hostname) DO NOTHING
    RETURNING hostname
    """
)
LOCK_STAGED = text(
    """
    SELECT q.hostname, q.status_reason FROM queue q JOIN bulk_names s USING (hostname)
     ORDER BY q.hostname FOR UPDATE OF q
    """
)
SET_NO_FOLLOW = text(
    """
    UPDATE queue q SET status_reason = 'no_follow', note = s.note
      FROM bulk_names s
     WHERE q.hostname = s.hostname AND q.status_reason IS DISTINCT FROM 'no_follow'
    """
)
# Every routed row under a new entry leaves routing, credited to the nearest new entry.
# OFFSET 0 keeps the row filters out of the lateral scan, so it is always the range
# scan of ix_queue_reversed, whatever the planner believes of the queue's size.
TAKE_OUT_UNDER = text(
    """
    WITH under AS (
        SELECT DISTINCT ON (r.hostname) r.hostname, s.hostname AS entry
          FROM bulk_names s
         CROSS JOIN LATERAL (
               SELECT hostname, denied_by, status_reason FROM queue
                WHERE reverse(hostname::text) >= reverse(s.hostname) || '.'
                  AND reverse(hostname::text) < reverse(s.hostname) || '/'
               OFFSET 0) r
         WHERE r.denied_by IS NULL AND r.status_reason IS NULL
         ORDER BY r.hostname, length(s.hostname) DESC),
    locked AS (
        SELECT q.hostname, under.entry FROM queue q JOIN under USING (hostname)
         ORDER BY q.hostname FOR UPDATE OF q)
    UPDATE queue q SET denied_by = locked.entry FROM locked WHERE q.hostname = locked.hostname
    """
)
REMOVE_ENTRIES = text(
    """
    WITH old AS (
        SELECT q.hostname, q.blocked_reason, q.note FROM queue q JOIN bulk_names s USING (hostname)
         WHERE q.status_reason = :rule ORDER BY q.hostname FOR UPDATE OF q)
    UPDATE queue q SET status_reason = NULL, blocked_reason = NULL, blocked_at = NULL, note = NULL
      FROM old WHERE q.hostname = old.hostname
    RETURNING q.hostname, coalesce(old.blocked_reason, old.note)
    """
)
PUT_BACK = text(
    f"""
    UPDATE queue q SET denied_by = {NEAREST_ENTRY}
      FROM (SELECT hostname, denied_by FROM queue WHERE denied_by = ANY(:entries)
             ORDER BY hostname FOR UPDATE) AS t
     WHERE q.hostname = t.hostname
    RETURNING t.denied_by AS entry, q.denied_by
    """
).bindparams(*names_param("entries"))


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
    repeats: list[tuple[int, str]] = field(default_factory=list)

    def take(self, value: str, hostname: str, note: str | None) -> None:
        """A valid name: staged the first time, settled like it after that."""
        self.inputs.append(value)
        self.results.append(None)
        if hostname in self.first:
            self.repeats.append((len(self.results) - 1, hostname))
            return
        self.first[hostname] = len(self.results) - 1
        self.notes[hostname] = note

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


def batches(items: Iterable[Item], size: int) -> Iterator[list[tuple[str, str | None]]]:
    """(value, note) lists of `size` items (a bare value has no note of its own)."""
    pairs = ((i, None) if isinstance(i, str) else i for i in items)
    while chunk := list(islice(pairs, size)):
        yield chunk


def no_refusal(hostname: str) -> None:
    """Deny entries and removals refuse nothing beyond normalize()'s rules."""


def _prepare(
    chunk: list[tuple[str, str | None]],
    name_of: Callable[[str], str],
    refusal: Callable[[str], str | None],
    note: str | None,
    repeated: str,
) -> Batch:
    """Normalize and check each input in Python; the rest of the batch is the database's."""
    batch = Batch(repeated)
    for value, own_note in chunk:
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
    with (
        conn.connection.driver_connection.cursor() as cursor,
        cursor.copy("COPY bulk_names (hostname, root, note) FROM STDIN") as copy,
    ):
        for hostname, note in batch.notes.items():
            copy.write_row((hostname, root(hostname) if with_roots else None, note))
    conn.execute(text("ANALYZE bulk_names"))


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
) -> Iterator[list[EntryChange]]:
    """Queue operator-given hostnames, a batch at a time; each batch's results in order.

    Refused: malformed names, names that are no crawlable host (seed_refusal()),
    names under a deny entry. Queued: new hosts; already: known before.
    """

    def refusal(hostname: str) -> str | None:
        return seed_refusal(hostname, allow_private=allow_private, force=force)

    prepared = (
        _prepare(chunk, normalize, refusal, None, "already") for chunk in batches(items, size)
    )
    yield from overlapped(prepared, lambda batch: _write_seeds(engine, batch))


def overlapped(prepared: Iterator[Batch], write: Callable[[Batch], None]) -> Iterator[list]:
    """Write each batch in a thread while the next one is prepared; results in order.

    The database works while Python normalizes. Each batch is still its own transaction,
    written one after another, and none is started after one has failed.
    """
    with ThreadPoolExecutor(1, thread_name_prefix="bulk-write") as pool:
        pending: tuple[Batch, Future | None] | None = None
        for batch in prepared:  # the next batch is prepared while `pending` is written
            done = _finished(*pending) if pending is not None else None  # raises if it failed
            pending = (batch, pool.submit(write, batch) if batch.first else None)
            if done is not None:
                yield done
        if pending is not None:
            yield _finished(*pending)


def _finished(batch: Batch, running: Future | None) -> list[EntryChange]:
    if running is not None:
        running.result()
    return batch.done()


@analyzes_after
@retry_conflicts
def _write_seeds(engine: Engine, batch: Batch) -> None:
    with engine.begin() as conn:
        stage(conn, batch)
        refuse_denied(conn, batch)
        new = set(conn.execute(INSERT_HOSTS).scalars())
        conn.execute(QUEUE_SEEDS)
    for hostname, i in batch.first.items():
        if batch.results[i] is None:
            batch.settle(hostname, "queued" if hostname in new else "already")


# -- deny entries ------------------------------------------------------------------------


def add_no_follow(
    engine: Engine,
    items: Iterable[Item],
    actor: str = SYSTEM,
    note: str | None = None,
    force: bool = False,
    size: int = BATCH,
) -> Iterator[list[EntryChange]]:
    """Add no_follow entries a batch at a time; a blocked entry becomes no_follow.

    The hosts under each new entry leave routing; one change-log row per batch.
    """

    def name_of(value: str) -> str:
        return normalize_entry(value, force=force)

    prepared = (_prepare(c, name_of, no_refusal, note, "already") for c in batches(items, size))
    yield from overlapped(prepared, lambda batch: _write_no_follow(engine, batch, actor, note))


@analyzes_after
@retry_conflicts
def _write_no_follow(engine: Engine, batch: Batch, actor: str, note: str | None) -> None:
    with engine.begin() as conn:
        stage(conn, batch)
        conn.execute(INSERT_HOSTS)
        fresh = set(conn.execute(INSERT_ENTRIES).scalars())
        previous = {h: None if h in fresh else rule for h, rule in conn.execute(LOCK_STAGED)}
        already = [h for h, rule in previous.items() if rule == NO_FOLLOW]
        if already:
            conn.execute(UNSTAGE, {"names": already})
        added = [h for h in batch.first if previous.get(h) != NO_FOLLOW]
        if added:
            conn.execute(SET_NO_FOLLOW)
            conn.execute(TAKE_OUT_UNDER)
            details = [batch.notes[added[0]]] if len(added) == 1 else STAGED_NOTES
            record_batch(conn, actor, "no_follow.add", added, details, note)
            announce(conn, "add", added, NO_FOLLOW)
    for hostname in batch.first:
        rule = previous.get(hostname)
        if rule == NO_FOLLOW:
            batch.settle(hostname, "already")
        else:
            batch.settle(hostname, "added", "was blocked" if rule == BLOCKED else "")


def remove_no_follow(
    engine: Engine, items: Iterable[Item], actor: str = SYSTEM, note: str | None = None
) -> Iterator[list[EntryChange]]:
    """Remove no_follow entries a batch at a time; the hosts they took out come back."""
    return _remove(engine, items, NO_FOLLOW, actor, note)


def unblock(
    engine: Engine, items: Iterable[Item], actor: str = SYSTEM, note: str | None = None
) -> Iterator[list[EntryChange]]:
    """Lift blocks a batch at a time; the hosts they took out come back."""
    return _remove(engine, items, BLOCKED, actor, note)


def _remove(
    engine: Engine, items: Iterable[Item], rule: str, actor: str, note: str | None
) -> Iterator[list[EntryChange]]:
    prepared = (_prepare(c, normalize, no_refusal, note, "absent") for c in batches(items, BATCH))
    yield from overlapped(prepared, lambda batch: _write_removal(engine, batch, rule, actor, note))


@analyzes_after
@retry_conflicts
def _write_removal(engine: Engine, batch: Batch, rule: str, actor: str, note: str | None) -> None:
    action, status = REMOVAL[rule]
    with engine.begin() as conn:
        stage(conn, batch, with_roots=False)
        removed = dict(conn.execute(REMOVE_ENTRIES, {"rule": rule}).all())
        restored = dict.fromkeys(removed, 0)
        if removed:
            for entry, now_by in conn.execute(PUT_BACK, {"entries": list(removed)}):
                restored[entry] += now_by is None
            names = sorted(removed)
            conn.execute(FORGET_ENTRY_ONLY_ROWS, {"names": names})
            record_batch(conn, actor, action, names, [removed[h] for h in names], note)
            announce(conn, "remove", names, rule)
    for hostname in batch.first:
        if hostname in removed:
            batch.settle(hostname, status, f"{restored[hostname]} hosts back in routing")
        else:
            batch.settle(hostname, "absent", f"no {rule} entry")


def collect(batches: Iterable[list[EntryChange]]) -> list[EntryChange]:
    """Every batch's results in one list (for callers that take at most a few batches)."""
    return [change for batch in batches for change in batch]
