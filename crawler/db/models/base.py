"""The schema's shared parts: the declarative base and its naming rule, the hostname column type."""

from __future__ import annotations

from sqlalchemy import (
    DateTime,
    MetaData,
    String,
    text,
)
from sqlalchemy.orm import DeclarativeBase

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Byte order (C collation): hostnames are ASCII, and suffix ranges must not depend on locale.
HOSTNAME = String(253, collation="C")
Timestamp = DateTime(timezone=True)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def reversed_name(column: str) -> object:
    """reverse(hostname): "every name under example.org" becomes a range scan."""
    return text(f"reverse({column}::text)")
