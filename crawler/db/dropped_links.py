"""Links each deny entry dropped from crawled pages: the no_follow and blocked lists'
"links dropped" (the crawl's stats count them too, all entries together:
hostcrawl/links/dropped/<rule>).

The crawl's finish (crawler.db.queue.finish_many) adds its batch's counts in its own
transaction, one statement per shard group of the entries' roots, as its last writes (a
popular entry's row is locked until the commit, no longer): a row per entry name, kept
with the entry's queue row (dropped_links is distributed by root on a Citus cluster).
The count stays with the name: an entry removed and added again goes on from where it
was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from sqlalchemy import Connection, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.types import BigInteger

from crawler.core.hostnames import root
from crawler.db.deployments import by_shard_group
from crawler.db.sql_pieces import names_param

# In (root, hostname) order: one lock order for every writer of these rows.
ADD = text(
    """
    INSERT INTO dropped_links AS d (hostname, root, links)
    SELECT * FROM unnest(:names, :roots, :links) AS t ORDER BY 2, 1
    ON CONFLICT (hostname, root) DO UPDATE SET links = d.links + excluded.links
    """
).bindparams(*names_param("names", "roots"), bindparam("links", type_=ARRAY(BigInteger)))
READ = text("SELECT hostname, links FROM dropped_links WHERE hostname = ANY(:names)").bindparams(
    *names_param("names")
)


def add(conn: Connection, by_entry: Mapping[str, int]) -> None:
    """Add {entry name: links it dropped} to the entries' counts."""
    counted = {name: n for name, n in by_entry.items() if n > 0}
    roots_of = {name: root(name) for name in counted}
    for _, names in by_shard_group(conn, roots_of):
        params = {"names": names, "roots": [roots_of[n] for n in names]}
        conn.execute(ADD, {**params, "links": [counted[n] for n in names]})


def gathered(pages: Iterable[Mapping[str, int]]) -> Counter[str]:
    """Many pages' {entry: links dropped}, summed."""
    total = Counter[str]()
    for page in pages:
        total.update(page)
    return total


def links_dropped(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """{entry name: links it dropped} for those of `names` that dropped any."""
    names = sorted(set(names))
    if not names:
        return {}
    return dict(conn.execute(READ, {"names": names}).all())
