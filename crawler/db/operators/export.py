"""What the crawl found, streamed out: CSV through COPY, JSON lines through a server-side
cursor. Either way in constant memory, whatever the number of hosts.

The rows are the panel's host list for the same filter (crawler.db.operators.host_filter.HostFilter:
the same search, outcome, root and the same deny rule), in hostname order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

from sqlalchemy import Engine, Select, String, case, literal, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql.elements import ColumnElement

from crawler.db.deployments import Deployment, deployment_of
from crawler.db.models import Host
from crawler.db.operators.host_filter import HostFilter

FORMATS = ("csv", "jsonl")
COLUMNS = (
    Host.hostname,
    Host.root,
    Host.outcome,
    Host.http_status,
    Host.scheme,
    Host.final_url,
    Host.title,
    Host.discovered_at,
    Host.discovered_from,
    Host.last_crawled_at,
)
JSONL_BATCH = 5_000
# A spreadsheet runs a cell starting with one of these as a formula (webpanel.entry_input too).
FORMULA_PATTERN = "^[=+@\t\r-]"


def neutralised(column) -> ColumnElement:
    """The text column as a spreadsheet shows it: a formula-looking cell gets a quote."""
    return case(
        (column.regexp_match(FORMULA_PATTERN), literal("'", String) + column), else_=column
    ).label(column.key)


def export_statement(
    flt: HostFilter, deployment: Deployment, for_spreadsheet: bool = False
) -> Select:
    """The hosts of `flt` on `deployment` (`deployment_of` the connection: one server's
    deny test is not the cluster's), by hostname. HostnameError for a search or root that
    is no name."""
    columns = [
        neutralised(c) if for_spreadsheet and c.key in ("title", "final_url") else c
        for c in COLUMNS
    ]
    return select(*columns).where(*flt.conditions(deployment)).order_by(Host.hostname)


def csv_chunks(engine: Engine, flt: HostFilter) -> Iterator[bytes]:
    """The CSV (header first) in the chunks COPY sends; formula cells neutralised."""
    with engine.connect() as conn:
        statement = export_statement(flt, deployment_of(conn), for_spreadsheet=True)
        compiled = statement.compile(dialect=postgresql.dialect())
        copy_sql = f"COPY ({compiled}) TO STDOUT WITH (FORMAT csv, HEADER)"
        conn.exec_driver_sql("SET LOCAL max_parallel_workers_per_gather = 0")
        with (
            conn.connection.driver_connection.cursor() as cursor,
            cursor.copy(copy_sql, compiled.params) as copy,
        ):
            for chunk in copy:
                yield bytes(chunk)


def jsonl_lines(engine: Engine, flt: HostFilter) -> Iterator[str]:
    """One JSON object a line, read through a server-side cursor."""
    with engine.connect() as conn:
        streamed = conn.execution_options(stream_results=True, yield_per=JSONL_BATCH)
        statement = export_statement(flt, deployment_of(conn))
        for row in streamed.execute(statement):
            yield json.dumps({k: _plain(v) for k, v in row._mapping.items()}) + "\n"


def _plain(value):
    return value.isoformat() if isinstance(value, datetime) else value
