"""The one schema, shared by the crawler, the CLI, the panel and Alembic: one
`Base.metadata` over the crawl's tables, the panel's figures and the operators' tables,
a module each."""

from crawler.db.models.base import HOSTNAME, NAMING_CONVENTION, Base, Timestamp, reversed_name
from crawler.db.models.crawl import (
    CrawlWorker,
    Host,
    RootRow,
    TrapDeferral,
    TrapWindowRow,
    WildcardProbe,
    WorldSilence,
)
from crawler.db.models.figures import DroppedLinks, HostHour, HostMinute, RootClaims, SourceHour
from crawler.db.models.operators import ChangeLogEntry, ChangeLogItems, LoginFailure, User

__all__ = [
    "HOSTNAME",
    "NAMING_CONVENTION",
    "Base",
    "ChangeLogEntry",
    "ChangeLogItems",
    "CrawlWorker",
    "DroppedLinks",
    "Host",
    "HostHour",
    "HostMinute",
    "LoginFailure",
    "RootClaims",
    "RootRow",
    "SourceHour",
    "Timestamp",
    "TrapDeferral",
    "TrapWindowRow",
    "User",
    "WildcardProbe",
    "WorldSilence",
    "reversed_name",
]
