"""The operators' tables: accounts, login failures and the change log."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    func,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from crawler.db.models.base import HOSTNAME, Base, Timestamp


class ChangeLogEntry(Base):
    """One change to the deny entries in the operators' change log: who, what, when."""

    __tablename__ = "change_log"

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    actor: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(32))
    hostname: Mapped[str] = mapped_column(HOSTNAME)
    detail: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        Index("ix_change_log_at", "at"),
        Index("ix_change_log_hostname", "hostname"),
    )


class ChangeLogItems(Base):
    """The names of one batch of a deny-entry change, in one row: the change-log row holds
    the batch's count (a change of one name has no items row).

    Arrays, not a row per name: a batch of 20,000 names costs one row to log.
    """

    __tablename__ = "change_log_items"
    # Which batch added a name (the entry lists' "added at ... by ..."): migration 0013.
    __table_args__ = (Index("ix_change_log_items_names", "names", postgresql_using="gin"),)

    change_id: Mapped[int] = mapped_column(
        ForeignKey("change_log.id", ondelete="CASCADE"), primary_key=True
    )
    names: Mapped[list[str]] = mapped_column(ARRAY(Text))
    details: Mapped[list[str | None]] = mapped_column(ARRAY(Text))  # a note or reason each


class User(Base):
    """A panel operator."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(Text)
    api_token_hash: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    # admin: everything; viewer: read-only pages and GET API calls.
    role: Mapped[str] = mapped_column(String(16), server_default="admin")
    # Set: no login, no session, no API token works.
    disabled_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # Part of every session's id: raising it (logout, a new password, disabling) ends
    # every session of this operator on the server, whatever cookies are kept.
    session_generation: Mapped[int] = mapped_column(Integer, server_default="1")

    __table_args__ = (CheckConstraint("role IN ('admin', 'viewer')", name="role"),)


class LoginFailure(Base):
    """Failed logins, per (username, client address) and per address (username '').

    They slow the next attempt down and are forgotten a day after the last one: no
    account is ever locked, so nobody can lock an operator out by guessing. Unknown
    usernames get rows like known ones: both cost and read the same.
    """

    __tablename__ = "login_failures"

    username: Mapped[str] = mapped_column(String(64), primary_key=True)
    address: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer)
    last_failed_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())

    __table_args__ = (Index("ix_login_failures_last_failed_at", "last_failed_at"),)
