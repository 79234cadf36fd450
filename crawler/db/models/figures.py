"""The figures the panel draws: claims per root and minute, hosts per hour, source and
minute, and the links each deny entry dropped."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from crawler.db.models.base import HOSTNAME, Base, Timestamp


class RootClaims(Base):
    """Hosts of a root claimed in one minute: the rolling-hour budget sums them.

    Written by the claim itself (crawler.db.crawl.claims), no trigger; pruned by
    crawler.db.crawl.retention.
    """

    __tablename__ = "root_claims"

    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    minute: Mapped[datetime] = mapped_column(Timestamp, primary_key=True)
    claimed: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_root_claims_minute", "minute"),)


class HostHour(Base):
    """Hosts discovered and crawled (by outcome group) in one hour, kept by the writers of
    hosts (crawler.db.crawl.rollups.count_hours). One row per hour and writer shard: the reader
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
    row), kept by the writers of hosts (crawler.db.crawl.rollups.count_sources). One row per
    hour, writer shard and group: the reader sums them."""

    __tablename__ = "source_hours"

    hour: Mapped[datetime] = mapped_column(Timestamp, primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    source: Mapped[str] = mapped_column(String(16), primary_key=True)
    discovered: Mapped[int] = mapped_column(Integer, server_default="0")


class HostMinute(Base):
    """Hosts crawled (failures by layer, tries an outage held back among them) and
    discovered in one minute, kept by the writers of hosts beside host_hours
    (crawler.db.crawl.rollups.count_hours, count_held): the dashboard's health row. One row
    per minute and writer shard; pruned after MINUTES_KEPT (retention)."""

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
    # Of the failures above, the tries an outage held back (not settled: not in crawled).
    held: Mapped[int] = mapped_column(Integer, server_default="0")
    # When a host last answered in this minute and shard (the writer's transaction time).
    last_ok_at: Mapped[datetime | None] = mapped_column(Timestamp)


class DroppedLinks(Base):
    """Links a deny entry dropped from crawled pages (migration 0025), counted by the
    crawl's finish (crawler.db.crawl.dropped_links) per entry name; kept per root with the
    entry's row (a Citus cluster co-locates it)."""

    __tablename__ = "dropped_links"

    hostname: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    root: Mapped[str] = mapped_column(HOSTNAME, primary_key=True)
    links: Mapped[int] = mapped_column(BigInteger, server_default="0")
