"""Counts in words that agree: "1 host", "3 hosts", "1 entry", "2 entries". Pure.

Every count the crawler, the CLI and the panel print with its noun goes through
`counted` (the panel's templates as the `counted` filter), so no line reads "1 hosts".
"""

from __future__ import annotations


def counted(count: int, noun: str, nouns: str | None = None) -> str:
    """`count` (with thousands separators) and `noun`, or its plural: `nouns`, else the
    noun with an s (give `nouns` for the others: "entry", "entries")."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"
