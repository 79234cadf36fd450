"""The Database class: every read and write of the crawl's state (DESIGN.md §3, §5, §6, §8).

The crawler, the CLI and the panel all go through it, so each rule has one
implementation. Methods are synchronous; the crawler calls them from a thread
so the event loop never blocks.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Connection, Engine, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.types import Boolean, Integer, Interval, String

from crawler.db.retry import retry_conflicts
from crawler.denylist import BLOCKED, NO_FOLLOW, Denial, DenyList
from crawler.hostnames import HostnameError, normalize, normalize_entry, root
from crawler.links import FilteredLinks, filter_links
from crawler.outcomes import ALIVE, NETWORK_FAILURES, is_network_failure
from crawler.traps import DEFAULT_WINDOW, Observation, trap_reason

log = logging.getLogger(__name__)

DENYLIST_CHANNEL = "hostcrawl_denylist"
DEFAULT_LEASE = timedelta(minutes=10)
NAMES = ARRAY(String)


@dataclass(frozen=True)
class CrawlResult:
    """What fetching one host's front page came to."""

    outcome: str
    http_status: int | None = None
    final_url: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class Crawled:
    """One crawled host for finish_many(): its result, its page's links, its next date."""

    hostname: str
    result: CrawlResult
    hrefs: tuple[str, ...] = ()
    recrawl_after: timedelta = timedelta(days=7)


@dataclass(frozen=True)
class Backoff:
    """How long a dead host waits: min(base · 2^k, cap) after k failures in a row."""

    base: timedelta = timedelta(hours=1)
    cap: timedelta = timedelta(days=30)

    def after(self, failures: int) -> timedelta:
        if failures <= 0:
            return timedelta(0)
        return min(self.base * 2 ** min(failures, 20), self.cap)


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
            return f"{self.input!r}: {self.message}"
        stored = self.hostname if self.input == self.hostname else f"{self.input} → {self.hostname}"
        return f"{stored}: {self.status}" + (f" ({self.message})" if self.message else "")


def suffix_range(hostname: str) -> tuple[str, str]:
    """Bounds of reverse(name) for every name strictly below `hostname`.

    '/' follows '.' in byte order, so [lo, hi) holds exactly the names ending in
    '.' + hostname, and never 'notexample.org' or 'example.orgx'.
    """
    lo = hostname[::-1] + "."
    return lo, lo[:-1] + "/"


def names_below(column: str) -> str:
    """SQL: `column` is strictly below the name whose suffix_range() is :lo, :hi."""
    return f"reverse({column}::text) >= :lo AND reverse({column}::text) < :hi"


UNDER = names_below("hostname")

# The nearest other deny entry above a row, or NULL when none covers it.
NEAREST_ENTRY = """
    (SELECT d.hostname FROM queue d
      WHERE d.hostname = ANY(host_parents(q.hostname)) AND d.hostname <> q.hostname
        AND d.status_reason IS NOT NULL
      ORDER BY length(d.hostname) DESC LIMIT 1)
"""

# Routable and due: no deny entry of its own or above it (q's own row is due,
# so only its parents can be entries). {under} narrows it to one root.
DUE = """
    SELECT q.hostname FROM queue q
     WHERE q.status_reason IS NULL AND q.denied_by IS NULL
       AND q.next_claim_at <= now() {under}
       AND NOT EXISTS (
           SELECT 1 FROM queue d
            WHERE d.hostname = ANY((host_parents(q.hostname))[2:])
              AND d.status_reason IS NOT NULL)
     ORDER BY q.next_claim_at
     LIMIT :n
"""
UNDER_ROOT = f"AND (q.hostname = :root OR ({names_below('q.hostname')}))"
CLAIM = """
    WITH due AS ({due} FOR UPDATE OF q SKIP LOCKED)
    UPDATE queue q
       SET next_claim_at = now() + :lease, claimed_by = :worker, claimed_at = now()
      FROM due WHERE q.hostname = due.hostname
    RETURNING q.hostname
"""
CLAIM_ALL = text(CLAIM.format(due=DUE.format(under="")))
CLAIM_UNDER = text(CLAIM.format(due=DUE.format(under=UNDER_ROOT)))
DUE_UNDER = text(DUE.format(under=UNDER_ROOT))
DUE_ALL = text(DUE.format(under=""))
CRAWL_PENDING = text(
    f"""
    SELECT EXISTS (SELECT 1 FROM queue
                    WHERE status_reason IS NULL AND denied_by IS NULL
                      AND next_claim_at > now() AND next_claim_at <= now() + :lease
                      AND claimed_by IS NOT NULL)
        OR EXISTS ({DUE.format(under="")})
    """
)


COVERING_ENTRIES = text(
    "SELECT hostname, status_reason FROM queue"
    " WHERE hostname = ANY(host_parents(:h)) AND status_reason IS NOT NULL"
)


def current_denial(conn, hostname: str) -> Denial | None:
    """The entry covering a normalized hostname now, asked of the database: for one-off
    questions (a seed, a panel page) that should not load the whole deny list."""
    entries = [(h, r) for h, r in conn.execute(COVERING_ENTRIES, {"h": hostname})]
    return DenyList(entries).denial(hostname)


def _under(root: str | None) -> dict:
    if root is None:
        return {}
    lo, hi = suffix_range(root)
    return {"root": root, "lo": lo, "hi": hi}


# The database's clock (one for all workers), one microsecond apart to keep order.
UPSERT_WINDOW = text(
    """
    INSERT INTO trap_window (root, hostname, outcome, seen_at)
    SELECT r, h, o, clock_timestamp() + i * interval '1 microsecond'
      FROM unnest(:roots, :names, :kinds) WITH ORDINALITY AS t(r, h, o, i)
    ON CONFLICT (root, hostname)
    DO UPDATE SET outcome = excluded.outcome, seen_at = excluded.seen_at
    """
).bindparams(*(bindparam(name, type_=NAMES) for name in ("roots", "names", "kinds")))
TRIM_WINDOWS = text(
    """
    DELETE FROM trap_window w USING (
        SELECT root, hostname,
               row_number() OVER (PARTITION BY root ORDER BY seen_at DESC) AS rank
          FROM trap_window WHERE root = ANY(:roots)) AS r
     WHERE w.root = r.root AND w.hostname = r.hostname AND r.rank > :size
    """
).bindparams(bindparam("roots", type_=NAMES))
READ_WINDOWS = text(
    "SELECT root, hostname, outcome, seen_at FROM trap_window WHERE root = ANY(:roots)"
    " ORDER BY root, seen_at DESC"
).bindparams(bindparam("roots", type_=NAMES))


INSERT_HOSTS = text(
    """
    INSERT INTO hosts (hostname, root, discovered_from)
    SELECT * FROM unnest(:names, :roots, :sources)
    ON CONFLICT (hostname) DO NOTHING
    RETURNING hostname
    """
).bindparams(*(bindparam(name, type_=NAMES) for name in ("names", "roots", "sources")))
QUEUE_HOSTS = text(
    """
    INSERT INTO queue (hostname, next_claim_at)
    SELECT h, now() FROM unnest(:names) AS t(h)
    ON CONFLICT (hostname) DO UPDATE SET next_claim_at = now()
     WHERE queue.next_claim_at IS NULL AND queue.status_reason IS NULL
    """
).bindparams(bindparam("names", type_=NAMES))
INTS = ARRAY(Integer)
WRITE_RESULTS = text(
    """
    UPDATE hosts h SET last_crawled_at = now(), outcome = t.outcome, http_status = t.status,
           final_url = t.url, title = t.title, links_found = t.found, links_saved = t.saved,
           links_filtered = t.filtered, crawl_count = h.crawl_count + 1,
           fail_streak = CASE WHEN t.failed THEN h.fail_streak + 1 ELSE 0 END
      FROM (SELECT * FROM unnest(:names, :outcomes, :statuses, :urls, :titles,
                                 :found, :saved, :filtered, :failed)
              AS u(hostname, outcome, status, url, title, found, saved, filtered, failed)
             ORDER BY hostname) AS t
     WHERE h.hostname = t.hostname
    """
).bindparams(
    *(bindparam(name, type_=NAMES) for name in ("names", "outcomes", "urls", "titles")),
    *(bindparam(name, type_=INTS) for name in ("statuses", "found", "saved", "filtered")),
    bindparam("failed", type_=ARRAY(Boolean)),
)


class Database:
    """The crawl's state in Postgres, with this process's copy of the deny list."""

    def __init__(self, engine: Engine | None = None, *, actor: str = "system") -> None:
        if engine is None:
            from crawler.db.engine import get_engine

            engine = get_engine()
        self.engine = engine
        self.actor = actor
        self._denylist: DenyList | None = None
        self._denylist_lock = threading.Lock()

    # -- the deny list ---------------------------------------------------------

    @property
    def denylist(self) -> DenyList:
        """This process's copy of the deny entries, loaded on first use.

        The panel and the CLI only write entries or ask about one host
        (`current_denial`): they never pay for loading (and holding) millions.
        """
        denylist = self._denylist
        return denylist if denylist is not None else self.load_denylist()

    def deny_entries(self) -> list[tuple[str, str]]:
        """Every deny entry as (hostname, rule)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT hostname, status_reason FROM queue WHERE status_reason IS NOT NULL")
            )
            return [(h, r) for h, r in rows]

    def load_denylist(self, *, fresh: bool = False) -> DenyList:
        """The deny list, read from the database if not loaded yet (or if `fresh`:
        then in place, so holders of the list see the new entries)."""
        with self._denylist_lock:
            if self._denylist is None:
                self._denylist = DenyList(self.deny_entries())
            elif fresh:
                self._denylist.replace(self.deny_entries())
            return self._denylist

    def reload_denylist(self) -> None:
        self.load_denylist(fresh=True)

    def remember_entry(self, hostname: str, rule: str | None) -> None:
        """Keep a loaded deny list in step with a committed entry change (rule None:
        removed), made by this process or announced by another one.

        An unloaded list needs nothing: it will read the write from the database.
        The lock makes a load in progress finish first, so the write is never lost.
        """
        with self._denylist_lock:
            if self._denylist is None:
                return
            if rule is None:
                self._denylist.remove(hostname)
            else:
                self._denylist.add(hostname, rule)

    # -- discovery -------------------------------------------------------------

    @retry_conflicts
    def save_hosts(self, hostnames: Iterable[str], discovered_from: str | None = None) -> int:
        """Insert normalized, allowed hostnames into hosts and the queue (due now).

        Idempotent. Returns how many hosts were new. Callers filter first; a
        dateless row (made by a deny entry) gets a date when a link finds it.
        """
        found = {name: discovered_from for name in hostnames}
        if not found:
            return 0
        with self.engine.begin() as conn:
            return self._insert_hosts(conn, found)

    def _insert_hosts(self, conn: Connection, found: dict[str, str | None]) -> int:
        """Insert {hostname: discovered_from} in hostname order (the lock order)."""
        names = sorted(found)
        params = {"names": names, "roots": [root(n) for n in names]}
        new = conn.execute(INSERT_HOSTS, {**params, "sources": [found[n] for n in names]})
        conn.execute(QUEUE_HOSTS, {"names": names})
        return len(new.fetchall())

    @retry_conflicts
    def seed(self, values: Sequence[str]) -> list[EntryChange]:
        """Queue operator-given hostnames; denied or malformed ones are refused."""
        changes = []
        for value in values:
            try:
                hostname = normalize(value)
            except HostnameError as exc:
                changes.append(EntryChange(value, None, "refused", exc.reason))
                continue
            with self.engine.connect() as conn:
                denial = current_denial(conn, hostname)
            if denial is not None:
                why = f"under {denial.rule} entry {denial.entry}"
                changes.append(EntryChange(value, hostname, "refused", why))
                continue
            new = self.save_hosts([hostname])
            changes.append(EntryChange(value, hostname, "queued" if new else "already"))
        return changes

    # -- claiming (§6) -----------------------------------------------------------

    def start_urls(
        self, n: int, worker: str, lease: timedelta = DEFAULT_LEASE, under: str | None = None
    ) -> list[str]:
        """Claim up to n due hosts (only `under` and below, if given), oldest first.

        Their date moves forward by the lease: if the worker dies, they come back.
        """
        statement = CLAIM_ALL if under is None else CLAIM_UNDER
        params = {"n": n, "worker": worker, "lease": lease, **_under(under)}
        with self.engine.begin() as conn:
            return [h for (h,) in conn.execute(statement, params)]

    def crawl_pending(self, lease: timedelta = DEFAULT_LEASE) -> bool:
        """True while a host is due, or any worker holds an unexpired claim (its links
        may make more due).

        One statement, so one snapshot: a finish that releases its claim and makes
        its links due in the same transaction cannot slip between two checks.
        """
        with self.engine.connect() as conn:
            return conn.execute(CRAWL_PENDING, {"lease": lease, "n": 1}).scalar_one()

    def count_due(self, n: int, under: str | None = None) -> int:
        """How many hosts start_urls could claim now (counting at most n)."""
        statement = DUE_ALL if under is None else DUE_UNDER
        counted = text(f"SELECT count(*) FROM ({statement.text}) AS due")
        with self.engine.connect() as conn:
            return conn.execute(counted, {"n": n, **_under(under)}).scalar_one()

    @retry_conflicts
    def release(self, hostnames: Sequence[str]) -> None:
        """Give claimed hosts back, due now."""
        with self.engine.begin() as conn:
            self._schedule(conn, [(h, timedelta(0)) for h in hostnames])

    def due_hosts(self, n: int, under: str | None = None) -> list[str]:
        """What start_urls would claim, without claiming it (for dry runs)."""
        statement = DUE_ALL if under is None else DUE_UNDER
        with self.engine.connect() as conn:
            return [h for (h,) in conn.execute(statement, {"n": n, **_under(under)})]

    def finish(
        self,
        hostname: str,
        result: CrawlResult,
        hrefs: Iterable[str] = (),
        recrawl_after: timedelta = timedelta(days=7),
    ) -> FilteredLinks:
        """Write a crawled host's result, its new links and its next date atomically."""
        return self.finish_many([Crawled(hostname, result, tuple(hrefs), recrawl_after)])[0]

    @retry_conflicts
    def finish_many(self, crawled: Sequence[Crawled]) -> list[FilteredLinks]:
        """finish() for many hosts in one transaction: all are written, or none."""
        linksets = []
        found: dict[str, str | None] = {}
        for host in crawled:
            links = filter_links(host.hrefs, host.hostname, self.denylist)
            links.hostnames.discard(host.hostname)
            linksets.append(links)
            for name in links.hostnames:
                found.setdefault(name, host.hostname)
        with self.engine.begin() as conn:
            self._write_results(conn, crawled, linksets)
            if found:
                self._insert_hosts(conn, found)
            self._schedule(conn, [(host.hostname, host.recrawl_after) for host in crawled])
        return linksets

    def _write_results(
        self, conn: Connection, crawled: Sequence[Crawled], linksets: list[FilteredLinks]
    ) -> None:
        results = [host.result for host in crawled]
        conn.execute(
            WRITE_RESULTS,
            {
                "names": [host.hostname for host in crawled],
                "outcomes": [r.outcome for r in results],
                "statuses": [r.http_status for r in results],
                "urls": [r.final_url for r in results],
                "titles": [r.title for r in results],
                "found": [links.found for links in linksets],
                "saved": [len(links.hostnames) for links in linksets],
                "filtered": [links.filtered for links in linksets],
                "failed": [is_network_failure(r.outcome) for r in results],
            },
        )

    # -- deny entries -------------------------------------------------------------

    @retry_conflicts
    def upsert_blocked(self, hostname: str, reason: str, actor: str | None = None) -> bool:
        """Block a hostname (a trap root) with a readable reason; True if newly blocked.

        A no_follow entry stays as it is: the operator's word wins.
        """
        with self.engine.begin() as conn:
            previous = self._ensure_row(conn, hostname)
            if previous in (BLOCKED, NO_FOLLOW):
                return False
            conn.execute(
                text(
                    """
                    UPDATE queue SET status_reason = 'blocked', blocked_reason = :reason,
                           blocked_at = now()
                     WHERE hostname = :hostname
                    """
                ),
                {"hostname": hostname, "reason": reason},
            )
            self._take_out_of_routing(conn, hostname)
            self._audit(conn, actor, "block", hostname, reason)
            self._notify(conn, "add", hostname, BLOCKED)
        self.remember_entry(hostname, BLOCKED)
        log.warning("blocked %s: %s", hostname, reason)
        return True

    def add_no_follow(
        self,
        values: Sequence[str],
        note: str | None = None,
        actor: str | None = None,
        force: bool = False,
    ) -> list[EntryChange]:
        """Add operator no_follow entries; each input normalized and reported."""
        changes = []
        for value in values:
            try:
                hostname = normalize_entry(value, force=force)
            except HostnameError as exc:
                changes.append(EntryChange(value, None, "refused", exc.reason))
                continue
            changes.append(self._add_no_follow(value, hostname, note, actor))
        return changes

    @retry_conflicts
    def _add_no_follow(
        self, value: str, hostname: str, note: str | None, actor: str | None
    ) -> EntryChange:
        with self.engine.begin() as conn:
            previous = self._ensure_row(conn, hostname)
            if previous == NO_FOLLOW:
                return EntryChange(value, hostname, "already")
            conn.execute(
                text(
                    "UPDATE queue SET status_reason = 'no_follow', note = :note"
                    " WHERE hostname = :hostname"
                ),
                {"hostname": hostname, "note": note},
            )
            self._take_out_of_routing(conn, hostname)
            self._audit(conn, actor, "no_follow.add", hostname, note)
            self._notify(conn, "add", hostname, NO_FOLLOW)
        self.remember_entry(hostname, NO_FOLLOW)
        return EntryChange(value, hostname, "added", "was blocked" if previous else "")

    def remove_no_follow(
        self, values: Sequence[str], actor: str | None = None, note: str | None = None
    ) -> list[EntryChange]:
        """Remove no_follow entries; the hosts they took out of routing come back."""
        return [self._remove_entry(v, NO_FOLLOW, "no_follow.remove", actor, note) for v in values]

    def unblock(
        self, values: Sequence[str], actor: str | None = None, note: str | None = None
    ) -> list[EntryChange]:
        """Lift blocks (false positives); the hosts they took out come back."""
        return [self._remove_entry(v, BLOCKED, "unblock", actor, note) for v in values]

    @retry_conflicts
    def _remove_entry(
        self, value: str, rule: str, action: str, actor: str | None, note: str | None
    ) -> EntryChange:
        try:
            hostname = normalize(value)
        except HostnameError as exc:
            return EntryChange(value, None, "refused", exc.reason)
        with self.engine.begin() as conn:
            found = conn.execute(
                text(
                    """
                    WITH old AS (
                        SELECT hostname, blocked_reason, note FROM queue
                         WHERE hostname = :hostname AND status_reason = :rule FOR UPDATE)
                    UPDATE queue q SET status_reason = NULL, blocked_reason = NULL,
                           blocked_at = NULL, note = NULL
                      FROM old WHERE q.hostname = old.hostname
                    RETURNING old.blocked_reason, old.note
                    """
                ),
                {"hostname": hostname, "rule": rule},
            ).first()
            if found is None:
                return EntryChange(value, hostname, "absent", f"no {rule} entry")
            restored = self._put_back_in_routing(conn, hostname)
            detail = "; ".join(filter(None, [note, found.blocked_reason or found.note]))
            self._audit(conn, actor, action, hostname, detail or None)
            self._notify(conn, "remove", hostname, rule)
        self.remember_entry(hostname, None)
        status = "unblocked" if rule == BLOCKED else "removed"
        return EntryChange(value, hostname, status, f"{restored} hosts back in routing")

    def _ensure_row(self, conn: Connection, hostname: str) -> str | None:
        """Make sure hosts and queue rows exist (locked); return the current rule."""
        conn.execute(
            text("INSERT INTO hosts (hostname, root) VALUES (:h, :r) ON CONFLICT DO NOTHING"),
            {"h": hostname, "r": root(hostname)},
        )
        conn.execute(
            text("INSERT INTO queue (hostname) VALUES (:h) ON CONFLICT DO NOTHING"),
            {"h": hostname},
        )
        return conn.execute(
            text("SELECT status_reason FROM queue WHERE hostname = :h FOR UPDATE"),
            {"h": hostname},
        ).scalar_one()

    def _take_out_of_routing(self, conn: Connection, entry: str) -> int:
        lo, hi = suffix_range(entry)
        return conn.execute(
            text(
                # Rows locked in hostname order, as every multi-row write here does.
                f"""
                UPDATE queue q SET denied_by = :entry
                  FROM (SELECT hostname FROM queue WHERE {UNDER}
                          AND denied_by IS NULL AND status_reason IS NULL
                         ORDER BY hostname FOR UPDATE) AS t
                 WHERE q.hostname = t.hostname
                """
            ),
            {"entry": entry, "lo": lo, "hi": hi},
        ).rowcount

    def _put_back_in_routing(self, conn: Connection, entry: str) -> int:
        """Rows the entry took out: back to routing, unless another entry covers them."""
        rows = conn.execute(
            text(
                f"""
                UPDATE queue q SET denied_by = {NEAREST_ENTRY}
                  FROM (SELECT hostname FROM queue WHERE denied_by = :entry
                         ORDER BY hostname FOR UPDATE) AS t
                 WHERE q.hostname = t.hostname
                RETURNING q.denied_by
                """
            ),
            {"entry": entry},
        ).fetchall()
        return sum(1 for (by,) in rows if by is None)

    def _audit(
        self, conn: Connection, actor: str | None, action: str, hostname: str, detail: str | None
    ) -> None:
        conn.execute(
            text(
                "INSERT INTO audit_log (actor, action, hostname, detail)"
                " VALUES (:actor, :action, :hostname, :detail)"
            ),
            {
                "actor": actor or self.actor,
                "action": action,
                "hostname": hostname,
                "detail": detail,
            },
        )

    def _notify(self, conn: Connection, change: str, hostname: str, rule: str) -> None:
        """Tell every listening worker, when this transaction commits."""
        payload = json.dumps({"change": change, "hostname": hostname, "rule": rule})
        conn.execute(
            text("SELECT pg_notify(:channel, :payload)"),
            {"channel": DENYLIST_CHANNEL, "payload": payload},
        )

    @retry_conflicts
    def take_out_of_routing(self, hostname: str, entry: str) -> None:
        """A request to `hostname` was denied by `entry`: its row leaves routing (and its claim)."""
        with self.engine.begin() as conn:
            conn.execute(
                text(
                    # The claim is released either way, and the host is due at once the moment
                    # it is routable: now if the entry was removed meanwhile (this worker heard
                    # late), or when the entry is removed later.
                    """
                    WITH entry AS (
                        SELECT EXISTS (SELECT 1 FROM queue
                                        WHERE hostname = :entry AND status_reason IS NOT NULL)
                               AS stands)
                    UPDATE queue q SET claimed_by = NULL, claimed_at = NULL,
                           denied_by = CASE WHEN q.status_reason IS NULL AND entry.stands
                                            THEN :entry ELSE q.denied_by END,
                           next_claim_at = CASE WHEN q.status_reason IS NULL
                                                THEN now() ELSE q.next_claim_at END
                      FROM entry
                     WHERE q.hostname = :hostname
                    """
                ),
                {"hostname": hostname, "entry": entry},
            )

    # -- listing -------------------------------------------------------------------

    def list_entries(self, rule: str) -> list[dict]:
        """Deny entries of one rule with their reason, note and date, by hostname."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    """
                    SELECT hostname, blocked_reason, blocked_at, note FROM queue
                     WHERE status_reason = :rule ORDER BY hostname
                    """
                ),
                {"rule": rule},
            )
            return [dict(r._mapping) for r in rows]

    # -- the trap window (§5) --------------------------------------------------------

    def record_outcome(
        self, hostname: str, outcome: str, size: int = DEFAULT_WINDOW, actor: str | None = None
    ) -> str | None:
        """Put a subdomain's outcome into its root's window; block the root if it is a trap.

        Returns the blocked_reason when this call blocked the root.
        """
        blocked = self.record_outcomes([(hostname, outcome)], size, actor)
        return blocked.get(root(hostname))

    @retry_conflicts
    def record_outcomes(
        self,
        outcomes: Sequence[tuple[str, str]],
        size: int = DEFAULT_WINDOW,
        actor: str | None = None,
    ) -> dict[str, str]:
        """record_outcome() for many (hostname, outcome) pairs in one transaction.

        Order is completion order. Returns {root: blocked_reason} for roots this blocked.
        """
        latest: dict[str, str] = {}
        for hostname, outcome in outcomes:  # a name seen twice keeps its last outcome
            latest.pop(hostname, None)
            latest[hostname] = outcome
        rows = [(root(h), h, o) for h, o in latest.items() if root(h) != h]
        if not rows:
            return {}
        with self.engine.begin() as conn:
            windows = self._update_windows(conn, rows, size)
        blocked = {}
        for domain, window in windows.items():
            reason = trap_reason(domain, window, size)
            if reason and self.upsert_blocked(domain, reason + self._wildcard_note(domain), actor):
                blocked[domain] = reason
        return blocked

    def _wildcard_note(self, domain: str) -> str:
        probe = self.wildcard_probe(domain)
        if probe is None:
            return ""
        name, outcome = probe
        if outcome in ALIVE:
            return f"; wildcard zone: the random name {name} resolves"
        return f"; not a wildcard zone: the random name {name} gave {outcome}"

    def _update_windows(
        self, conn: Connection, rows: list[tuple], size: int
    ) -> dict[str, list[Observation]]:
        """Upsert the observations and trim each touched window to `size`.

        Returns the windows of the roots that got a failure: only a failure can
        complete a trap, so the (frequent) OK outcomes cost no read-back.
        """
        roots, names, kinds = (list(column) for column in zip(*rows, strict=True))
        conn.execute(UPSERT_WINDOW, {"roots": roots, "names": names, "kinds": kinds})
        conn.execute(TRIM_WINDOWS, {"roots": sorted(set(roots)), "size": size})
        failing = sorted({r for r, _, o in rows if is_network_failure(o)})
        if not failing:
            return {}
        windows: dict[str, list[Observation]] = {}
        for r in conn.execute(READ_WINDOWS, {"roots": failing}):
            windows.setdefault(r.root, []).append(Observation(r.hostname, r.outcome, r.seen_at))
        return windows

    def window(self, domain: str) -> list[Observation]:
        """A root's current window, newest first (the evidence /blocked shows)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT hostname, outcome, seen_at FROM trap_window WHERE root = :root"
                    " ORDER BY seen_at DESC"
                ),
                {"root": domain},
            )
            return [Observation(*r) for r in rows]

    # -- the DNS/TLS audit (§7) ------------------------------------------------------

    @retry_conflicts
    def record_audits(
        self,
        results: Sequence[tuple[str, str]],
        backoff: Backoff,
        size: int = DEFAULT_WINDOW,
        actor: str | None = None,
    ) -> dict[str, str]:
        """Write audited hosts' outcomes and next dates; feed their roots' windows.

        A live host stays due for the crawl; a dead one backs off exponentially.
        Returns {root: blocked_reason} for the roots these outcomes blocked.
        """
        if not results:
            return {}
        names, kinds = (list(column) for column in zip(*results, strict=True))
        with self.engine.begin() as conn:
            streaks = conn.execute(
                text(
                    """
                    UPDATE hosts h SET audited_at = now(), audit_outcome = t.outcome,
                           fail_streak = CASE WHEN t.outcome = ANY(:failures) THEN
                                         h.fail_streak + 1 ELSE 0 END
                      FROM unnest(:names, :kinds) AS t(hostname, outcome)
                     WHERE h.hostname = t.hostname
                    RETURNING h.hostname, h.fail_streak
                    """
                ).bindparams(*(bindparam(p, type_=NAMES) for p in ("names", "kinds", "failures"))),
                {"names": names, "kinds": kinds, "failures": sorted(NETWORK_FAILURES)},
            ).fetchall()
            self._schedule(conn, [(h, backoff.after(k)) for h, k in streaks])
        return self.record_outcomes(results, size, actor)

    def _schedule(self, conn: Connection, delays: list[tuple[str, timedelta]]) -> None:
        """Release claims (entry rows too) and set each routable row's next date."""
        if not delays:
            return
        conn.execute(
            text(
                """
                UPDATE queue q SET claimed_by = NULL, claimed_at = NULL,
                       next_claim_at = CASE WHEN q.status_reason IS NULL
                                            THEN now() + t.after ELSE q.next_claim_at END
                  FROM unnest(:names, :afters) AS t(hostname, after)
                 WHERE q.hostname = t.hostname
                """
            ).bindparams(
                bindparam("names", type_=NAMES), bindparam("afters", type_=ARRAY(Interval))
            ),
            {"names": [h for h, _ in delays], "afters": [d for _, d in delays]},
        )

    def wildcard_probe(self, domain: str) -> tuple[str, str] | None:
        """(probe name, outcome) of the root's wildcard probe, if it was made."""
        with self.engine.connect() as conn:
            row = conn.execute(
                text("SELECT probe, outcome FROM wildcard_probes WHERE root = :root"),
                {"root": domain},
            ).first()
        return (row.probe, row.outcome) if row else None

    @retry_conflicts
    def save_wildcard_probe(self, domain: str, probe: str, outcome: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                text(
                    """
                    INSERT INTO wildcard_probes (root, probe, outcome) VALUES (:root, :probe, :o)
                    ON CONFLICT (root) DO UPDATE SET probe = excluded.probe,
                           outcome = excluded.outcome, checked_at = now()
                    """
                ),
                {"root": domain, "probe": probe, "o": outcome},
            )

    # -- operators -------------------------------------------------------------------

    def create_user(self, username: str, password: str) -> None:
        """Create a panel operator; the password is stored as an Argon2id hash."""
        from crawler.passwords import check_new_user, hash_password

        check_new_user(username, password)
        with self.engine.begin() as conn:
            taken = conn.execute(
                text("SELECT 1 FROM users WHERE username = :u"), {"u": username}
            ).first()
            if taken:
                raise ValueError(f"{username!r}: user already exists")
            conn.execute(
                text("INSERT INTO users (username, password_hash) VALUES (:u, :p)"),
                {"u": username, "p": hash_password(password)},
            )
