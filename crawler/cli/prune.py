"""`hostcrawl prune`: forget what is past its retention (crawler/db/crawl/retention.py).

Workers already prune every PRUNE_INTERVAL seconds; this is for a deployment
without running workers, or a one-off after lowering a setting.
"""

from __future__ import annotations

import dataclasses

import click

from crawler.cli.common import engine, friendly_errors
from crawler.core import config
from crawler.db.crawl import retention

DAYS = click.IntRange(min=0)
# kind: what the report calls it, the unit its setting counts
SHOWN = {
    "change_log": ("change log rows", "days"),
    "wildcard_probes": ("wildcard probes", "days"),
    "root_claims": ("per-root claim counts", "minutes"),
    "host_hours": ("hourly host counts", "days"),
    "trap_window": ("trap window outcomes", "days"),
    "trap_deferrals": ("held-back blocks not looked at", "days"),
}


@click.command()
@click.option(
    "--change-log-days",
    type=DAYS,
    default=None,
    help="Keep this many days of the change log (0: keep all)."
    f" Default: CHANGE_LOG_RETENTION_DAYS"
    f" ({config.setting('CHANGE_LOG_RETENTION_DAYS').default}).",
)
@click.option(
    "--probe-days",
    type=DAYS,
    default=None,
    help="Keep wildcard probes this many days; older roots are probed again (0: keep all)."
    f" Default: PROBE_RETENTION_DAYS ({config.setting('PROBE_RETENTION_DAYS').default}).",
)
@click.option("--dry-run", is_flag=True, help="Count what would go; delete nothing.")
@friendly_errors
def prune(change_log_days: int | None, probe_days: int | None, dry_run: bool) -> None:
    """Delete what is past each retention setting (see `hostcrawl settings`, group
    retention)."""
    rules = retention.Rules.from_environment()
    if change_log_days is not None:
        rules = dataclasses.replace(rules, change_log=change_log_days)
    if probe_days is not None:
        rules = dataclasses.replace(rules, wildcard_probes=probe_days)
    pruned = retention.prune(engine(), rules, dry_run)
    verb = "would delete" if dry_run else "deleted"
    for kind, (what, unit) in SHOWN.items():
        keep = getattr(rules, kind)
        kept = f"older than {keep} {unit}" if keep else "none: all kept"
        click.echo(f"{what}: {verb} {getattr(pruned, kind):,} ({kept})")
