"""Pieces of SQL every query module shares: typed array parameters, ranges of names, and
filled(), the one way a statement is built from pieces.

Hostnames are stored normalized (docs/design.md, rule 1), so "everything under a name"
is a range of reverse(hostname), served by the ix_*_reversed indexes.
"""

from __future__ import annotations

from string import Formatter

from sqlalchemy import bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.types import Integer, String

NAMES = ARRAY(String)
INTS = ARRAY(Integer)


def names_param(*names: str):
    """Bind parameters typed as text[] (for unnest and = ANY)."""
    return tuple(bindparam(name, type_=NAMES) for name in names)


def filled(template: str, **parts: str) -> str:
    """The statement `template` with each of its {places} filled by the part of that name.
    ValueError if it has no place for a part (str.format would drop the part without a
    word, and the statement would run without its filter); KeyError for a place given no
    part. The one way this code builds a statement from pieces."""
    places = {name for _, name, _, _ in Formatter().parse(template) if name is not None}
    if unplaced := sorted(parts.keys() - places):
        raise ValueError(f"no {{{unplaced[0]}}} in the statement to put its part in")
    return template.format(**parts)


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


def under_an_entry(row: str, scope: str = "") -> str:
    """SQL: a deny entry stands above `row` (its own row is routable, so only its parents
    can be one) at or under its root: a join on root, which Citus runs within a shard.
    An entry above a root (a forced bare suffix) lives in another shard: the blacklist
    middleware refuses a host under one before download. `scope`: more filters on the
    entry `d` (a cluster's routing pin)."""
    return f"""EXISTS (
               SELECT 1 FROM hosts d
                WHERE d.root = {row}.root {scope}
                  AND d.hostname = ANY((host_parents({row}.hostname))[2:])
                  AND d.status_reason IS NOT NULL)"""


# SQL: `q.hostname` is :root or below it (with under_params).
UNDER_ROOT = f"AND (q.hostname = :root OR ({names_below('q.hostname')}))"


# Routable and due, under no deny entry, oldest first: what a claim takes. {under}
# narrows it (UNDER_ROOT).
DUE = f"""
    SELECT q.hostname FROM hosts q
     WHERE q.status_reason IS NULL AND q.denied_by IS NULL
       AND q.next_claim_at <= now() {{under}}
       AND NOT {under_an_entry("q")}
     ORDER BY q.next_claim_at
     LIMIT :n
"""


def under_params(root: str | None) -> dict:
    """Parameters for a query narrowed to `root` and every name under it."""
    if root is None:
        return {}
    lo, hi = suffix_range(root)
    return {"root": root, "lo": lo, "hi": hi}
