"""`hostcrawl seed`: queue hosts for crawling, a few or a million.

Seeds are crawlable hosts (crawler.core.hostnames.seed_refusal): no bare public suffix
unless --force, no localhost nor loopback/private/link-local address outside
ALLOWED_PRIVATE_NETWORKS, the one setting of the private networks a crawl may reach, for
seeding and crawling alike. The old --allow-private (ALLOW_PRIVATE_HOSTS=1) still lets
such seeds in, with a deprecation line: the crawl then refused them (ADDRESS_REFUSED).
"""

from __future__ import annotations

import os

import click

from crawler.cli.bulkrun import finish, run_file
from crawler.cli.common import engine, friendly_errors, report
from crawler.db.operators import bulk

ALLOW_PRIVATE_DEPRECATED = (
    "warning: --allow-private (ALLOW_PRIVATE_HOSTS=1) is deprecated: it lets in seeds that the"
    " crawl then refuses (ADDRESS_REFUSED). List their networks in ALLOWED_PRIVATE_NETWORKS"
    " (e.g. 10.20.0.0/16) instead: one setting for seeding and crawling alike."
)


@click.command()
@click.argument("hosts", nargs=-1)
@click.option(
    "-f",
    "--file",
    "path",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="A list ('-': stdin): one name a line ('#' comments), rank,domain CSV; gzip too.",
)
@click.option("--force", is_flag=True, help="Seed a bare public suffix such as 'co.uk'.")
@click.option(
    "--allow-private",
    is_flag=True,
    envvar="ALLOW_PRIVATE_HOSTS",
    help="Deprecated: list the networks in ALLOWED_PRIVATE_NETWORKS (seeds and crawl alike).",
)
@click.option(
    "--report", "report_path", type=click.Path(dir_okay=False), help="Every line's result as CSV."
)
@friendly_errors
def seed(hosts: tuple[str, ...], path, force: bool, allow_private: bool, report_path) -> None:
    """Queue HOSTS (or the names in FILE) for crawling.

    With -f: a progress bar, then a summary (queued, already known, refused by
    reason); exit 1 only when something was refused.
    """
    if not hosts and path is None:
        raise click.UsageError("give hostnames or -f FILE")
    if allow_private:
        click.echo(ALLOW_PRIVATE_DEPRECATED, err=True)

    def change(items, workers: int = 0):
        return bulk.seed(engine(), items, allow_private=allow_private, force=force, workers=workers)

    if path is None:
        report([c for batch in change(hosts) for c in batch])
        return
    if hosts:
        raise click.UsageError("give hostnames or -f FILE, not both")
    # A file's names are checked by a process per core (crawler.db.operators.bulk_pool).
    finish(run_file(path, "seed", lambda items: change(items, os.cpu_count() or 1), report_path))
