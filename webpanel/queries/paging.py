"""Keyset pages that every panel list shares.

Lists page by keyset on (sort key, hostname), never by OFFSET, so a deep page
costs what the first one does. Their searches are crawler.db.operators.host_filter's."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, text, tuple_
from sqlalchemy.sql.elements import ColumnElement

from crawler.core.inputs import unstorable

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
SAMPLE_NAMES = 5


class BadCursor(ValueError):
    """A page cursor that this module did not make (or made for another sort)."""


@dataclass(frozen=True)
class Order:
    """A keyset order: key expressions (unique together) and their direction."""

    keys: tuple[ColumnElement, ...]
    kinds: tuple[str, ...]  # "str" | "datetime" | "int", to decode a cursor
    descending: bool = False


@dataclass
class Page:
    """One page of rows and the cursors of its neighbours (None at either end)."""

    rows: list[Any]
    next: str | None = None
    prev: str | None = None


def encode_cursor(values: Sequence[Any]) -> str:
    plain = [v.isoformat() if isinstance(v, datetime) else v for v in values]
    raw = json.dumps(plain, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


_KINDS = {"str": str, "int": int}


def decode_cursor(cursor: str, kinds: Sequence[str]) -> list[Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise BadCursor(f"bad page cursor {cursor!r}") from exc
    if not isinstance(values, list) or len(values) != len(kinds):
        raise BadCursor(f"bad page cursor {cursor!r}")
    decoded = []
    for value, kind in zip(values, kinds, strict=True):
        try:
            if kind == "datetime":
                value = datetime.fromisoformat(value)
            elif type(value) is not _KINDS[kind]:
                raise TypeError(kind)
            elif kind == "str" and unstorable(value):
                raise ValueError(unstorable(value))  # no query can take it
            elif kind == "int" and not -(2**63) <= value < 2**63:
                raise ValueError("out of range")  # no bigint is
        except (TypeError, ValueError) as exc:
            raise BadCursor(f"bad page cursor {cursor!r}") from exc
        decoded.append(value)
    return decoded


def paginate(
    conn,
    stmt: Select,
    order: Order,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """Run `stmt` as one keyset page after (or before) a cursor."""
    return _run_page(conn, *keyset(stmt, order, after, before, limit))


def keyset(
    stmt: Select, order: Order, after: str | None, before: str | None, limit: int
) -> tuple[Select, Order, bool, bool, int]:
    """The page's statement (with its key columns as _k0, _k1…), and how to read it."""
    limit = max(1, min(limit, MAX_LIMIT))
    backwards = before is not None
    cursor = before if backwards else after
    desc = order.descending != backwards
    keys = order.keys
    if cursor:
        values = decode_cursor(cursor, order.kinds)
        if len(keys) == 1:
            stmt = stmt.where(keys[0] < values[0] if desc else keys[0] > values[0])
        else:
            row, bound = tuple_(*keys), tuple_(*values)
            stmt = stmt.where(row < bound if desc else row > bound)
    stmt = stmt.add_columns(*(k.label(f"_k{i}") for i, k in enumerate(keys)))
    stmt = stmt.order_by(*(k.desc() if desc else k.asc() for k in keys)).limit(limit + 1)
    return stmt, order, backwards, bool(cursor), limit


def page_settings(conn) -> None:
    """For this transaction: no parallel plans. A page is a few dozen rows off an
    index, and parallel workers only add their start-up time (the planner cannot
    tell how many rows the deny test keeps, so it often expects thousands)."""
    conn.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))


def _run_page(conn, stmt, order: Order, backwards: bool, had_cursor: bool, limit: int) -> Page:
    page_settings(conn)
    rows = list(conn.execute(stmt).all())
    more = len(rows) > limit
    rows = rows[:limit]
    if backwards:
        rows.reverse()
    if not rows:
        return Page([])

    def key(row) -> str:
        return encode_cursor([row._mapping[f"_k{i}"] for i in range(len(order.keys))])

    if backwards:
        return Page(rows, next=key(rows[-1]), prev=key(rows[0]) if more else None)
    return Page(
        rows, next=key(rows[-1]) if more else None, prev=key(rows[0]) if had_cursor else None
    )
