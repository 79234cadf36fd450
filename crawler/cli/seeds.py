"""`hostcrawl seed`: queue hosts for crawling."""

from __future__ import annotations

import click

from crawler.cli.common import engine, friendly_errors, report
from crawler.db import queue


@click.command()
@click.argument("hosts", nargs=-1)
@click.option("-f", "--file", "path", type=click.File("r"), help="One hostname per line.")
@friendly_errors
def seed(hosts: tuple[str, ...], path) -> None:
    """Queue HOSTS (and those in FILE) for crawling."""
    values = list(hosts)
    if path is not None:
        values += [line.strip() for line in path if line.strip() and not line.startswith("#")]
    if not values:
        raise click.UsageError("give hostnames or -f FILE")
    report(queue.seed(engine(), values))
