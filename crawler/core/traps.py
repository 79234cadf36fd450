"""The trap rule. Pure: the window is read and written elsewhere.

A root whose last `size` unique subdomains all failed at DNS, TCP or TLS level
is a subdomain generator; one live subdomain in the window clears it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from crawler.core.outcomes import is_network_failure

SAMPLE_NAMES = 5


@dataclass(frozen=True)
class Observation:
    """The latest outcome of one subdomain."""

    hostname: str
    outcome: str
    seen_at: datetime


def trap_reason(root: str, window: Sequence[Observation], size: int) -> str | None:
    """The blocked_reason when the window proves `root` a trap, else None.

    `window` holds the newest observation per subdomain, newest first; only the
    first `size` count.
    """
    recent = list(window[:size])
    if len(recent) < size or not all(is_network_failure(o.outcome) for o in recent):
        return None
    return describe(root, recent)


def describe(root: str, recent: Sequence[Observation]) -> str:
    """Words an operator can read: the rule, counts by outcome, time span, samples."""
    counts = Counter(o.outcome for o in recent)
    by_type = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    first = min(o.seen_at for o in recent)
    last = max(o.seen_at for o in recent)
    samples = ", ".join(o.hostname for o in recent[:SAMPLE_NAMES])
    return (
        f"subdomain generator: the last {len(recent)} unique subdomains of {root} "
        f"all failed at DNS/TCP/TLS level ({by_type}) "
        f"between {first:%Y-%m-%d %H:%M:%S} and {last:%Y-%m-%d %H:%M:%S} UTC; "
        f"e.g. {samples}"
    )


HEADLINE_CHARS = 120  # past this a reason's first clause is cut, and said whole below


def reason_parts(reason: str) -> tuple[str, list[str]]:
    """A blocked_reason as a one-line headline and the details under it: the first clause
    without its parenthesis, then the parenthesis, the rest of that clause and each later
    clause (`; ` ends a clause). For describe()'s words: "subdomain generator: the last
    50 unique subdomains of x.test all failed at DNS/TCP/TLS level", then the counts by
    outcome, the time span and the sample names."""
    first, *later = [c.strip() for c in reason.split("; ") if c.strip()] or [""]
    head, paren, rest = first, "", ""
    if " (" in first and ")" in first:
        head, _, tail = first.partition(" (")
        paren, _, rest = tail.partition(")")
    details = [d.strip() for d in (paren, rest, *later) if d.strip()]
    if len(head) > HEADLINE_CHARS:
        return head[: HEADLINE_CHARS - 1].rstrip() + "…", [first, *later]
    return head, details
