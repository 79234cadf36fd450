"""The DNS/TLS audit's writes (docs/design.md, rule 7): outcomes and next dates of audited hosts.

A live host stays due for the crawl; a dead one backs off exponentially. The
outcomes also go into the trap windows, by the caller (crawler.windows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Engine, text

from crawler.core.outcomes import NETWORK_FAILURES
from crawler.db.crawl.queue import schedule
from crawler.db.server.retry import retry_conflicts
from crawler.db.server.sql_pieces import names_param


@dataclass(frozen=True)
class Backoff:
    """How long a dead host waits: min(base · 2^k, cap) after k failures in a row."""

    base: timedelta = timedelta(hours=1)
    cap: timedelta = timedelta(days=30)

    def after(self, failures: int) -> timedelta:
        if failures <= 0:
            return timedelta(0)
        return min(self.base * 2 ** min(failures, 20), self.cap)


WRITE_AUDITS = text(
    """
    UPDATE hosts h SET audited_at = now(), audit_outcome = t.outcome,
           fail_streak = CASE WHEN t.outcome = ANY(:failures) THEN
                         h.fail_streak + 1 ELSE 0 END
      FROM unnest(:names, :kinds) AS t(hostname, outcome)
     WHERE h.hostname = t.hostname
    RETURNING h.hostname, h.fail_streak
    """
).bindparams(*names_param("names", "kinds", "failures"))


@retry_conflicts
def record_audits(engine: Engine, results: Sequence[tuple[str, str]], backoff: Backoff) -> None:
    """Write audited hosts' (hostname, outcome), release their claims, set their dates."""
    if not results:
        return
    names, kinds = (list(column) for column in zip(*results, strict=True))
    with engine.begin() as conn:
        streaks = conn.execute(
            WRITE_AUDITS, {"names": names, "kinds": kinds, "failures": sorted(NETWORK_FAILURES)}
        ).fetchall()
        schedule(conn, [(h, backoff.after(k)) for h, k in streaks])
