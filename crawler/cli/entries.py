"""`hostcrawl no-follow` and `hostcrawl blocked`: deny entries."""

from __future__ import annotations

import click

from crawler.cli.common import ACTOR, engine, friendly_errors, report
from crawler.db import entries


@click.group("no-follow")
def no_follow() -> None:
    """Operator entries whose hosts are never saved nor crawled."""


@no_follow.command("add")
@click.argument("domains", nargs=-1, required=True)
@click.option("--note", help="Why (kept with the entry and in the audit log).")
@click.option("--force", is_flag=True, help="Accept a bare public suffix such as 'com'.")
@friendly_errors
def no_follow_add(domains: tuple[str, ...], note: str | None, force: bool) -> None:
    """Add DOMAINS to no_follow."""
    report(entries.add_no_follow(engine(), domains, ACTOR, note=note, force=force))


@no_follow.command("remove")
@click.argument("domains", nargs=-1, required=True)
@click.option("--note", help="Why (kept in the audit log).")
@friendly_errors
def no_follow_remove(domains: tuple[str, ...], note: str | None) -> None:
    """Remove DOMAINS from no_follow."""
    report(entries.remove_no_follow(engine(), domains, ACTOR, note=note))


@no_follow.command("list")
@friendly_errors
def no_follow_list() -> None:
    """Print every no_follow entry (and its note)."""
    for entry in entries.list_entries(engine(), "no_follow"):
        note = f"\t{entry['note']}" if entry["note"] else ""
        click.echo(f"{entry['hostname']}{note}")


@click.group()
def blocked() -> None:
    """Hosts blocked automatically (subdomain generators)."""


@blocked.command("list")
@friendly_errors
def blocked_list() -> None:
    """Print every blocked host and its blocked_reason."""
    for entry in entries.list_entries(engine(), "blocked"):
        click.echo(f"{entry['hostname']}\t{entry['blocked_reason']}")


@blocked.command("unblock")
@click.argument("hosts", nargs=-1, required=True)
@click.option("--note", help="Why (kept in the audit log).")
@friendly_errors
def blocked_unblock(hosts: tuple[str, ...], note: str | None) -> None:
    """Unblock HOSTS; the hosts their block took out come back into routing."""
    report(entries.unblock(engine(), hosts, ACTOR, note=note))
