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


HEADLINE_CHARS = 80  # past this a reason's first clause is cut, and said whole below
KIND_CHARS = 40  # "subdomain generator: …": a kind this long or shorter heads the reason
SHORT_REASON = 60  # a reason this short is its own headline


def reason_parts(reason: str) -> tuple[str, list[str]]:
    """A blocked_reason as a one-line headline and the details under it.

    A short reason (SHORT_REASON) is its own headline. Clauses end at "; ". The first
    clause's kind ("subdomain generator: …", "wildcard zone: …") and its parenthesis
    (the counts by outcome) make the headline; the rest of that clause and each later
    clause are the details. For describe()'s words: "subdomain generator (DNS_NXDOMAIN
    50)", then "the last 50 unique subdomains of x.test all failed at DNS/TCP/TLS
    level", the time span and the sample names.
    """
    if len(reason) <= SHORT_REASON:
        return reason.strip(), []
    first, *later = [c.strip() for c in reason.split("; ") if c.strip()] or [""]
    head, paren, after = first, "", ""
    if " (" in first and ")" in first:
        head, _, tail = first.partition(" (")
        paren, _, after = tail.partition(")")
    kind, colon, said = head.partition(": ")
    if colon and len(kind) <= KIND_CHARS:
        headline = f"{kind} ({paren})" if paren else kind
        return headline, [d.strip() for d in (said, after, *later) if d.strip()]
    if len(first) > HEADLINE_CHARS:
        return first[: HEADLINE_CHARS - 1].rstrip() + "…", [first, *later]
    return head, [d.strip() for d in (paren, after, *later) if d.strip()]
