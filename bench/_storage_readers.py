"""Which index each reader of hosts and roots takes, for bench/storage.py --readers
(docs/scaling.md, "What each index is for"): EXPLAIN of the panel's, the export's and
the claim's statements on the loaded rows (one server), the indexes each plan names."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.dialects import postgresql

from crawler.db.crawl.claims import OLDEST_DUE
from crawler.db.deployments import deployment_of
from crawler.db.operators.export import export_statement
from crawler.db.operators.host_filter import DOMAIN, HostFilter
from webpanel.queries import root_rows
from webpanel.queries.host_rows import host_statement
from webpanel.queries.paging import keyset


def statements(conn) -> dict[str, str]:
    """reader: its SQL with literal values, on a loaded database."""
    found = deployment_of(conn)
    some = conn.execute(text("SELECT root FROM roots ORDER BY hosts DESC LIMIT 1")).scalar_one()
    built = {
        "/ (by name)": host_statement(HostFilter(), deployment=found),
        "/ newest": host_statement(HostFilter(sort="newest"), deployment=found),
        "/ never crawled": host_statement(HostFilter(outcome="none"), deployment=found),
        "/ outcome OK": host_statement(HostFilter(outcome="OK"), deployment=found),
        "/ ?root=": host_statement(HostFilter(root=some), deployment=found),
        "/ domain search": host_statement(HostFilter(q=some, match=DOMAIN), deployment=found),
        "export": export_statement(HostFilter(), found),
        "/roots/<root> names": keyset(
            root_rows.subdomain_statement(some), root_rows.SUBDOMAIN_ORDER, None, None, 50
        )[0],
    }
    sql = {
        name: str(s.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        for name, s in built.items()
    }
    sql["claim: oldest due"] = OLDEST_DUE.text.replace(":n", "100")
    sql["dashboard: outcomes"] = "SELECT outcome, count(*) FROM hosts GROUP BY outcome"
    return sql


def indexes_of(plan: dict) -> list[str]:
    names, stack = [], [plan]
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans", []))
        if "Index Name" in node:
            names.append(f"{node['Index Name']} ({node['Node Type']})")
        elif node["Node Type"] == "Seq Scan":
            names.append(f"{node['Relation Name']} (Seq Scan)")
    return names


def print_readers(engine) -> None:
    with engine.connect() as conn:
        for name, sql in statements(conn).items():
            plan = conn.execute(text(f"EXPLAIN (FORMAT JSON) {sql}")).scalar_one()[0]["Plan"]
            print(f"reader {name}: {', '.join(indexes_of(plan))}")
