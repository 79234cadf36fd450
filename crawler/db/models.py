"""The one schema, shared by the crawler, the CLI, the panel and Alembic."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

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


class Host(Base):
    """A discovered hostname and the facts of its last crawl.

    Every writer of its rows keeps `roots` and `host_hours` in the same transaction
    (crawler.db.rollups; triggers until migration 0015).
    """

    __tablename__ = "hosts"

    # The key holds root, the distribution column on a Citus cluster (migration 0016);
    # hostname first, so a lookup by name alone is still one index probe.
    hostname: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    discovered_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    discovered_from: Mapped[str | None] = mapped_column(HOSTNAME)
    # Through which source group and place on discovered_from's page it was first seen.
    found_source: Mapped[str | None] = mapped_column(String(16))
    found_via: Mapped[str | None] = mapped_column(String(64))
    last_crawled_at: Mapped[datetime | None] = mapped_column(Timestamp)
    outcome: Mapped[str | None] = mapped_column(String(32))
    http_status: Mapped[int | None] = mapped_column(SmallInteger)
    final_url: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    # The scheme that answered the last crawl: https, or http by the fallback.
    scheme: Mapped[str | None] = mapped_column(String(8))
    links_found: Mapped[int | None] = mapped_column(Integer)
    links_saved: Mapped[int | None] = mapped_column(Integer)
    links_filtered: Mapped[int | None] = mapped_column(Integer)
    # Links of the last fetch dropped over MAX_NAMES_PER_PAGE / _PER_ROOT_PER_PAGE, and why
    # reading it stopped early, if it did (crawler.core.namecaps, crawler.core.budget).
    links_over_cap: Mapped[int | None] = mapped_column(Integer)
    extract_stopped: Mapped[str | None] = mapped_column(String(16))
    # Why its page was seen to name a flood of registered domains that fail at DNS.
    name_flood: Mapped[str | None] = mapped_column(Text)
    fail_streak: Mapped[int] = mapped_column(Integer, server_default="0")
    crawl_count: Mapped[int] = mapped_column(Integer, server_default="0")
    # The DNS/TLS audit's latest word on the host (docs/design.md, rule 7).
    audited_at: Mapped[datetime | None] = mapped_column(Timestamp)
    audit_outcome: Mapped[str | None] = mapped_column(String(32))
    # Tries whose failure was held back (our resolver or network did not answer: not
    # settled, not in crawl_count), and the last of them (migration 0026).
    held_tries: Mapped[int] = mapped_column(Integer, server_default="0")
    held_at: Mapped[datetime | None] = mapped_column(Timestamp)
    held_outcome: Mapped[str | None] = mapped_column(String(32))

    __table_args__ = (
        Index("ix_hosts_root", "root"),
        Index("ix_hosts_discovered_at", "discovered_at"),
        Index("ix_hosts_outcome", "outcome"),
        Index("ix_hosts_reversed", reversed_name("hostname")),
        # The banner's count of hosts held back in an outage: only hosts ever held back.
        Index("ix_hosts_held_at", "held_at", postgresql_where=text("held_at IS NOT NULL")),
    )


class QueueRow(Base):
    """Routing state of a hostname; a deny entry when status_reason is set.

    Every writer that dates a routable row lowers `roots.next_due_at` in the same
    transaction (crawler.db.rollups.lower_next_due).
    """

    __tablename__ = "queue"

    hostname: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    next_claim_at: Mapped[datetime | None] = mapped_column(Timestamp)
    status_reason: Mapped[str | None] = mapped_column(String(16))
    blocked_reason: Mapped[str | None] = mapped_column(Text)
    blocked_at: Mapped[datetime | None] = mapped_column(Timestamp)
    note: Mapped[str | None] = mapped_column(Text)
    # The deny entry that took this row out of routing, so removing that entry
    # puts back exactly the rows it took.
    denied_by: Mapped[str | None] = mapped_column(HOSTNAME)
    claimed_by: Mapped[str | None] = mapped_column(String(128))
    claimed_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # Claims in a row that no finish released (crawler.db.unfinished): a poison pill's.
    unfinished_claims: Mapped[int] = mapped_column(SmallInteger, server_default="0")
    # hosts.root, for per-root claims; every writer gives it. In the key, as in hosts'.
    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)

    __table_args__ = (
        ForeignKeyConstraint(
            ["hostname", "root"], ["hosts.hostname", "hosts.root"], ondelete="CASCADE"
        ),
        CheckConstraint("status_reason IN ('blocked', 'no_follow')", name="status_reason"),
        # Per-root claims (migration 0006): a root's oldest routable rows, and its claims.
        Index(
            "ix_queue_root_due",
            "root",
            "next_claim_at",
            postgresql_where=text("status_reason IS NULL AND denied_by IS NULL"),
        ),
        Index("ix_queue_root_claimed", "root", postgresql_where=text("claimed_by IS NOT NULL")),
        Index(
            "ix_queue_due",
            "next_claim_at",
            postgresql_where=text("status_reason IS NULL AND denied_by IS NULL"),
        ),
        # Deny entries only: small, so "is any parent an entry?" probes stay in cache.
        Index(
            "ix_queue_entries",
            "hostname",
            postgresql_where=text("status_reason IS NOT NULL"),
        ),
        Index("ix_queue_denied_by", "denied_by", postgresql_where=text("denied_by IS NOT NULL")),
        Index("ix_queue_reversed", reversed_name("hostname")),
        # The panel's host list walks this in hostname order, never through the rows
        # an entry took out of routing (migration 0003).
        Index(
            "ix_queue_shown",
            "hostname",
            postgresql_where=text("status_reason IS NULL AND denied_by IS NULL"),
        ),
        # Its complement, by root: the rows the main page's figures leave out (0012).
        Index(
            "ix_queue_hidden_root",
            "root",
            postgresql_where=text("status_reason IS NOT NULL OR denied_by IS NOT NULL"),
        ),
        # The entries by rule, counted index-only by the dashboard (0018).
        Index(
            "ix_queue_entry_rule",
            "status_reason",
            postgresql_where=text("status_reason IS NOT NULL"),
        ),
        # The same rows in the order of a hash of the name: counted index-only, and a
        # sample of them read by the dashboard (crawler.db.pages.hidden, 0018).
        Index(
            "ix_queue_hidden_sample",
            text("(hashtext(hostname::text) & 65535)"),
            "hostname",
            "root",
            "status_reason",
            postgresql_where=text("status_reason IS NOT NULL OR denied_by IS NOT NULL"),
        ),
    )


class TrapWindowRow(Base):
    """The latest outcome of one subdomain in its root's trap window.

    Its writers recount `roots.window_size` and `window_failed` (crawler.db.rollups).
    Lifting a deny entry empties its root's window (crawler.db.deny_entries).
    """

    __tablename__ = "trap_window"

    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    hostname: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    outcome: Mapped[str] = mapped_column(String(32))
    seen_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())

    __table_args__ = (Index("ix_trap_window_root_seen_at", "root", "seen_at"),)


class TrapDeferral(Base):
    """A block the self-check held back: the window proves a trap, but the world (or the
    window's sample) did not confirm it. Cleared when the root is blocked or cleared."""

    __tablename__ = "trap_deferrals"

    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    why: Mapped[str] = mapped_column(Text)
    since: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    checked_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())


class WorldSilence(Base):
    """A worker that finds no canary answering it (migration 0011): while its row is
    fresh, its blocks are held and its failing hosts tried again, not settled."""

    __tablename__ = "world_silences"

    worker: Mapped[str] = mapped_column(Text, primary_key=True)
    since: Mapped[datetime] = mapped_column(Timestamp)
    # No host has ever answered in this database: no canary to ask.
    never_answered: Mapped[bool] = mapped_column(Boolean)
    held_back: Mapped[int] = mapped_column(Integer)
    checked_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    # Why (migration 0026): the failing layer, its tries and failures over span_s seconds,
    # the commonest error and how often, and the settings behind that layer.
    layer: Mapped[str | None] = mapped_column(String(16))
    tries: Mapped[int | None] = mapped_column(Integer)
    failures: Mapped[int | None] = mapped_column(Integer)
    top_error: Mapped[str | None] = mapped_column(String(32))
    top_count: Mapped[int | None] = mapped_column(Integer)
    span_s: Mapped[float | None] = mapped_column(Float)
    settings_to_check: Mapped[str | None] = mapped_column(Text)


class CrawlWorker(Base):
    """A running crawler worker (migration 0017): its heartbeat, written every few seconds,
    and its pages per second; the dashboard counts the fresh rows as alive."""

    __tablename__ = "crawl_workers"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    host: Mapped[str] = mapped_column(Text)
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(Timestamp)
    heartbeat_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())
    pages: Mapped[int] = mapped_column(BigInteger)
    pages_per_s: Mapped[float] = mapped_column(Float)
    # Hosts in flight now, and hosts an outage holds back (tried again, not settled):
    # the dashboard's health row (migration 0025).
    in_flight: Mapped[int] = mapped_column(Integer, server_default="0")
    held_back: Mapped[int] = mapped_column(Integer, server_default="0")


class WildcardProbe(Base):
    """Whether a random label under a root resolves: a wildcard zone if it does."""

    __tablename__ = "wildcard_probes"

    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    probe: Mapped[str] = mapped_column(HOSTNAME)
    outcome: Mapped[str] = mapped_column(String(32))
    checked_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())


class RootRow(Base):
    """Per-root counters and claim state, kept by the writers of other tables in their
    own transactions (crawler.db.rollups: hosts and outcomes, the trap window's counts,
    next_due_at). The claim (crawler.db.claims) writes next_due_at and held_until too.
    """

    __tablename__ = "roots"

    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    hosts: Mapped[int] = mapped_column(Integer, server_default="0")
    crawled_ok: Mapped[int] = mapped_column(Integer, server_default="0")
    failed: Mapped[int] = mapped_column(Integer, server_default="0")
    window_size: Mapped[int] = mapped_column(SmallInteger, server_default="0")
    window_failed: Mapped[int] = mapped_column(SmallInteger, server_default="0")
    # Never later than the earliest date of the root's routable hosts.
    next_due_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # Over its budget: no host of the root is claimed before this.
    held_until: Mapped[datetime | None] = mapped_column(Timestamp)

    __table_args__ = (
        Index("ix_roots_next_due_at", "next_due_at"),
        Index("ix_roots_hosts", "hosts", "root"),
        Index("ix_roots_window_failed", "window_failed", "root"),
        Index("ix_roots_failed", "failed", "root"),
        Index("ix_roots_reversed", reversed_name("root")),
    )


class RootClaims(Base):
    """Hosts of a root claimed in one minute: the rolling-hour budget sums them.

    Written by the claim itself (crawler.db.claims), no trigger; pruned by
    crawler.db.retention.
    """

    __tablename__ = "root_claims"

    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    minute: Mapped[datetime] = mapped_column(Timestamp, primary_key=True)
    claimed: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_root_claims_minute", "minute"),)


class HostHour(Base):
    """Hosts discovered and crawled (by outcome group) in one hour, kept by the writers of
    hosts (crawler.db.rollups.count_hours). One row per hour and writer shard: the reader
    sums them."""

    __tablename__ = "host_hours"

    hour: Mapped[datetime] = mapped_column(Timestamp, primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    discovered: Mapped[int] = mapped_column(Integer, server_default="0")
    ok: Mapped[int] = mapped_column(Integer, server_default="0")
    http: Mapped[int] = mapped_column(Integer, server_default="0")
    network: Mapped[int] = mapped_column(Integer, server_default="0")
    ignored: Mapped[int] = mapped_column(Integer, server_default="0")
    # The last hosts that answered OK in this hour and shard, newest first: canaries.
    last_ok: Mapped[list[str] | None] = mapped_column(ARRAY(Text))


class SourceHour(Base):
    """Hosts discovered in one hour by one source group ('' none: a seed, an entry's own
    row), kept by the writers of hosts (crawler.db.rollups.count_sources). One row per
    hour, writer shard and group: the reader sums them."""

    __tablename__ = "source_hours"

    hour: Mapped[datetime] = mapped_column(Timestamp, primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    source: Mapped[str] = mapped_column(String(16), primary_key=True)
    discovered: Mapped[int] = mapped_column(Integer, server_default="0")


class HostMinute(Base):
    """Hosts crawled (failures by layer) and discovered in one minute, kept by the writers
    of hosts beside host_hours (crawler.db.rollups.count_hours): the dashboard's health
    row. One row per minute and writer shard; pruned after MINUTES_KEPT (retention)."""

    __tablename__ = "host_minutes"

    minute: Mapped[datetime] = mapped_column(Timestamp, primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    crawled: Mapped[int] = mapped_column(Integer, server_default="0")
    discovered: Mapped[int] = mapped_column(Integer, server_default="0")
    dns: Mapped[int] = mapped_column(Integer, server_default="0")
    address: Mapped[int] = mapped_column(Integer, server_default="0")
    tcp: Mapped[int] = mapped_column(Integer, server_default="0")
    tls: Mapped[int] = mapped_column(Integer, server_default="0")
    http: Mapped[int] = mapped_column(Integer, server_default="0")
    # When a host last answered in this minute and shard (the writer's transaction time).
    last_ok_at: Mapped[datetime | None] = mapped_column(Timestamp)


class DroppedLinks(Base):
    """Links a deny entry dropped from crawled pages (migration 0025), counted by the
    crawl's finish (crawler.db.dropped_links) per entry name; kept per root with the
    entry's row (a Citus cluster co-locates it)."""

    __tablename__ = "dropped_links"

    hostname: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    links: Mapped[int] = mapped_column(BigInteger, server_default="0")


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
