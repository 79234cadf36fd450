"""Trap windows, deferred blocks and wildcard probes (docs/design.md, rule 5), shared by
every worker.

Each root's window holds the latest outcome of its last unique subdomains.
Whether a window proves a trap is the core's rule (`traps.trap_reason`); this
module stores the windows and reports the roots whose window now does. The
caller decides whether to block (after its self-check).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, text

from crawler.core.hostnames import root
from crawler.core.outcomes import ALIVE, is_network_failure
from crawler.core.traps import Observation, trap_reason
from crawler.db import rollups
from crawler.db.deployments import deployment_of, root_groups, shard_groups
from crawler.db.retry import commit_statement, retry_conflicts
from crawler.db.sql_pieces import names_param

# The database's clock (one for all workers), one microsecond apart to keep order.
UPSERT_WINDOW = text(
    """
    INSERT INTO trap_window (root, hostname, outcome, seen_at)
    SELECT r, h, o, clock_timestamp() + i * interval '1 microsecond'
      FROM unnest(:roots, :names, :kinds) WITH ORDINALITY AS t(r, h, o, i)
    ON CONFLICT (root, hostname)
    DO UPDATE SET outcome = excluded.outcome, seen_at = excluded.seen_at
    """
).bindparams(*names_param("roots", "names", "kinds"))
READ_WINDOWS = text(
    "SELECT root, hostname, outcome, seen_at FROM trap_window WHERE root = ANY(:roots)"
    " ORDER BY root, seen_at DESC"
).bindparams(*names_param("roots"))
READ_WINDOW = text(
    "SELECT hostname, outcome, seen_at FROM trap_window WHERE root = :root ORDER BY seen_at DESC"
)
DEFER_BLOCK = text(
    """
    INSERT INTO trap_deferrals (root, why) VALUES (:root, :why)
    ON CONFLICT (root) DO UPDATE SET why = excluded.why, checked_at = excluded.checked_at
    """
)
CLEAR_DEFERRAL = text("DELETE FROM trap_deferrals WHERE root = :root")
SAVE_WILDCARD_PROBE = text(
    """
    INSERT INTO wildcard_probes (root, probe, outcome) VALUES (:root, :probe, :o)
    ON CONFLICT (root) DO UPDATE SET probe = excluded.probe,
           outcome = excluded.outcome, checked_at = excluded.checked_at
    """
)


@retry_conflicts
def record_outcomes(
    engine: Engine, outcomes: Sequence[tuple[str, str]], size: int
) -> dict[str, str]:
    """Put subdomains' (hostname, outcome) into their roots' windows, in completion order.

    Returns {root: trap reason} for the roots whose window now proves a trap.
    """
    latest: dict[str, str] = {}
    for hostname, outcome in outcomes:  # a name seen twice keeps its last outcome
        latest.pop(hostname, None)
        latest[hostname] = outcome
    rows = [(root(h), h, o) for h, o in latest.items() if root(h) != h]
    if not rows:
        return {}
    with engine.begin() as conn:
        windows = _update_windows(conn, rows, size)
    found = {domain: trap_reason(domain, window, size) for domain, window in windows.items()}
    return {domain: reason for domain, reason in found.items() if reason}


def _update_windows(conn: Connection, rows: list[tuple], size: int) -> dict[str, list[Observation]]:
    """Upsert the observations and trim each touched window to `size`.

    Returns the windows of the roots that got a failure: only a failure can
    complete a trap, so the (frequent) OK outcomes cost no read-back.
    """
    # Once per shard group (one on one server), each run's rows in completion order.
    trim = deployment_of(conn).trim_windows
    for group in shard_groups(conn, {r for r, _, _ in rows}):
        roots, names, kinds = zip(*(row for row in rows if row[0] in group), strict=True)
        conn.execute(
            UPSERT_WINDOW, {"roots": list(roots), "names": list(names), "kinds": list(kinds)}
        )
        conn.execute(trim, {"roots": sorted(group), "size": size})
    rollups.recount_windows(conn, (r for r, _, _ in rows))
    failing = sorted({r for r, _, o in rows if is_network_failure(o)})
    if not failing:
        return {}
    windows: dict[str, list[Observation]] = {}
    for group in root_groups(conn, failing):
        for r in conn.execute(READ_WINDOWS, {"roots": group}):
            windows.setdefault(r.root, []).append(Observation(r.hostname, r.outcome, r.seen_at))
    return windows


def window(engine: Engine, domain: str) -> list[Observation]:
    """A root's current window, newest first (the evidence /blocked shows)."""
    with engine.connect() as conn:
        return [Observation(*r) for r in conn.execute(READ_WINDOW, {"root": domain})]


def wildcard_probe(engine: Engine, domain: str) -> tuple[str, str] | None:
    """(probe name, outcome) of the root's wildcard probe, if it was made."""
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT probe, outcome FROM wildcard_probes WHERE root = :root"),
            {"root": domain},
        ).first()
    return (row.probe, row.outcome) if row else None


def wildcard_note(engine: Engine, domain: str) -> str:
    """What the root's wildcard probe showed, for its blocked_reason ('' if none)."""
    probe = wildcard_probe(engine, domain)
    if probe is None:
        return ""
    name, outcome = probe
    if outcome in ALIVE:
        return f"; wildcard zone: the random name {name} resolves"
    return f"; not a wildcard zone: the random name {name} gave {outcome}"


def defer_block(engine: Engine, domain: str, why: str) -> None:
    """Remember a held-back block (the first `since` stays while it lasts)."""
    commit_statement(engine, DEFER_BLOCK, {"root": domain, "why": why})


def clear_deferral(engine: Engine, domain: str) -> None:
    commit_statement(engine, CLEAR_DEFERRAL, {"root": domain})


@dataclass(frozen=True)
class Deferred:
    """What the panel's banner says while blocks are held back."""

    roots: int
    since: datetime
    why: str


def deferred_blocks(conn: Connection) -> Deferred | None:
    """How many blocks are held back, since when, and the oldest one's reason."""
    row = conn.execute(
        text(
            "SELECT count(*) OVER () AS roots, since, why FROM trap_deferrals"
            " ORDER BY since LIMIT 1"
        )
    ).first()
    return Deferred(row.roots, row.since, row.why) if row else None


def deferrals(engine: Engine) -> list[tuple[str, str]]:
    """(root, why) of every held-back block, oldest first."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT root, why FROM trap_deferrals ORDER BY since"))
        return [(r.root, r.why) for r in rows]


def save_wildcard_probe(engine: Engine, domain: str, probe: str, outcome: str) -> None:
    commit_statement(engine, SAVE_WILDCARD_PROBE, {"root": domain, "probe": probe, "o": outcome})
