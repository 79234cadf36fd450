"""The schema, the engine and the Database class."""

from crawler.db.database import Database
from crawler.db.engine import database_url, get_engine
from crawler.db.models import AuditEntry, Base, Host, QueueRow, TrapWindowRow, User

__all__ = [
    "AuditEntry",
    "Base",
    "Database",
    "Host",
    "QueueRow",
    "TrapWindowRow",
    "User",
    "database_url",
    "get_engine",
]
