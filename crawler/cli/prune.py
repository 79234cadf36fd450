"""`hostcrawl prune`: forget what is past its retention (crawler/db/retention.py)."""

from __future__ import annotations

import click

from crawler.cli.common import engine, friendly_errors
from crawler.core import config
from crawler.db import retention

DAYS = click.IntRange(min=0)


@click.command()
@click.option(
    "--change-log-days",
    type=DAYS,
    default=config.setting("CHANGE_LOG_RETENTION_DAYS").default,
    envvar="CHANGE_LOG_RETENTION_DAYS",
    show_default=True,
    help="Keep this many days of the change log (0: keep all). Env: CHANGE_LOG_RETENTION_DAYS.",
)
@click.option(
    "--probe-days",
    type=DAYS,
    default=config.setting("PROBE_RETENTION_DAYS").default,
    envvar="PROBE_RETENTION_DAYS",
    show_default=True,
    help="Keep wildcard probes this many days; older roots are probed again (0: keep all)."
    " Env: PROBE_RETENTION_DAYS.",
)
@click.option("--dry-run", is_flag=True, help="Count what would go; delete nothing.")
@friendly_errors
def prune(change_log_days: int, probe_days: int, dry_run: bool) -> None:
    """Delete old change-log rows, wildcard probes and per-root claim counts, and hosts rows
    without a queue row. Run it hourly: the claim counts grow by a row per root a minute."""
    pruned = retention.prune(engine(), change_log_days, probe_days, dry_run)
    verb = "would delete" if dry_run else "deleted"
    click.echo(f"change log: {verb} {pruned.change_log:,} rows ({older_than(change_log_days)})")
    click.echo(f"wildcard probes: {verb} {pruned.wildcard_probes:,} ({older_than(probe_days)})")
    click.echo(f"hosts without a queue row: {verb} {pruned.orphan_hosts:,}")
    click.echo(f"per-root claim counts older than 2 hours: {verb} {pruned.root_claims:,}")


def older_than(days: int) -> str:
    return f"older than {days} days" if days else "none: all kept"
