"""The crawl's tables, each kept per root: hosts, the queue, trap windows and deferrals, the
world's silences, workers, wildcard probes and the roots' rollups."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from crawler.db.models.base import HOSTNAME, Base, Timestamp, reversed_name


class Host(Base):
    """A discovered hostname: the facts of its last crawl, and its routing state (a deny
    entry when status_reason is set). One row a host, its name stored once (migration
    0030: the queue was a table of its own, keyed by the same name); `queue` is a view
    of its routing columns, for the operators' SQL (docs/design.md).

    Every writer of its rows keeps `roots` and `host_hours` in the same transaction
    (crawler.db.crawl.rollups; triggers until migration 0015), and every writer that dates
    a routable row lowers `roots.next_due_at` in it (crawler.db.crawl.rollups.lower_next_due).
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

    # Routing (the queue's columns until 0030).
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
    # Claims in a row that no finish released (crawler.db.crawl.unfinished): a poison pill's.
    unfinished_claims: Mapped[int] = mapped_column(SmallInteger, server_default="0")

    __table_args__ = (
        CheckConstraint("status_reason IN ('blocked', 'no_follow')", name="status_reason"),
        # No index by root alone (0028): it drew the planner away from the key for a
        # host's facts. A root's rows: ix_hosts_root_due and ix_hosts_hidden_root.
        # The list's sorts by date walk the shown hosts in the page's whole order (a bulk
        # seed dates a batch of 20,000 alike: by date alone, a page sorted that run), and
        # never through the deny entries and the rows they took (0031).
        Index(
            "ix_hosts_shown_by_date",
            "discovered_at",
            "hostname",
            postgresql_where=text("status_reason IS NULL AND denied_by IS NULL"),
        ),
        Index("ix_hosts_outcome", "outcome"),
        # The banner's count of hosts held back in an outage: only hosts ever held back.
        Index("ix_hosts_held_at", "held_at", postgresql_where=text("held_at IS NOT NULL")),
        # Per-root claims (migration 0006): a root's oldest routable rows, and its claims.
        Index(
            "ix_hosts_root_due",
            "root",
            "next_claim_at",
            postgresql_where=text("status_reason IS NULL AND denied_by IS NULL"),
        ),
        Index("ix_hosts_root_claimed", "root", postgresql_where=text("claimed_by IS NOT NULL")),
        Index(
            "ix_hosts_due",
            "next_claim_at",
            postgresql_where=text("status_reason IS NULL AND denied_by IS NULL"),
        ),
        # Deny entries only: small, so "is any parent an entry?" probes stay in cache. The
        # one index over the entries alone (0027): with a second one, statistics that
        # predate a big block list made the probes scan that one whole. Its rule lets the
        # dashboard count the entries by rule index-only.
        Index(
            "ix_hosts_entries",
            "hostname",
            postgresql_include=["status_reason"],
            postgresql_where=text("status_reason IS NOT NULL"),
        ),
        Index("ix_hosts_denied_by", "denied_by", postgresql_where=text("denied_by IS NOT NULL")),
        Index("ix_hosts_reversed", reversed_name("hostname")),
        # The panel's host list walks this in hostname order, never through the rows
        # an entry took out of routing (migration 0003).
        Index(
            "ix_hosts_shown",
            "hostname",
            postgresql_where=text("status_reason IS NULL AND denied_by IS NULL"),
        ),
        # Its complement, by root: the rows the main page's figures leave out (0012).
        Index(
            "ix_hosts_hidden_root",
            "root",
            postgresql_where=text("status_reason IS NOT NULL OR denied_by IS NOT NULL"),
        ),
        # The same rows in the order of a hash of the name: counted index-only, and a
        # sample of them read by the dashboard (crawler.db.operators.hidden, 0018).
        Index(
            "ix_hosts_hidden_sample",
            text("(hashtext(hostname::text) & 65535)"),
            "hostname",
            "root",
            "status_reason",
            postgresql_where=text("status_reason IS NOT NULL OR denied_by IS NOT NULL"),
        ),
    )


class TrapWindowRow(Base):
    """The latest outcome of one subdomain in its root's trap window.

    Its writers recount `roots.window_size` and `window_failed` (crawler.db.crawl.rollups).
    Lifting a deny entry empties its root's window (crawler.db.rules.deny_entries).
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
    own transactions (crawler.db.crawl.rollups: hosts and outcomes, the trap window's counts,
    next_due_at). The claim (crawler.db.crawl.claims) writes next_due_at and held_until too.
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
