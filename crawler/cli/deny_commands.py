"""`hostcrawl no-follow` and `hostcrawl blocked`: deny entries, a few or a whole block list.

Every change goes through crawler.db.rules.deny_entries, the one write path of any size:
names as arguments print a line each; `-f FILE` (plain, CSV, hosts file, Adblock
`||name^`; gzip; '-' for stdin) shows progress and a summary, and `--report FILE` keeps
every line's result.
"""

from __future__ import annotations

from functools import partial

import click

from crawler.cli.bulkrun import finish, run_file
from crawler.cli.common import ACTOR, checked_note, engine, friendly_errors, report
from crawler.core.hostnames import root
from crawler.db.operators.bulk import EntryChange
from crawler.db.rules import deny_entries

LIST_FILE = click.Path(dir_okay=False, allow_dash=True)
REPORT_FILE = click.Path(dir_okay=False)


def entry_change(file_help: str, note_help: str = "Why (kept in the change log)."):
    """The options of a command that changes entries: names, or -f FILE, a --note and
    a --report; its errors are one line (friendly_errors)."""

    def options(command):
        command = friendly_errors(command)
        command = click.option(
            "--report", "report_path", type=REPORT_FILE, help="Every line's result as CSV."
        )(command)
        command = click.option("--note", callback=checked_note, help=note_help)(command)
        return click.option("-f", "--file", "path", type=LIST_FILE, help=file_help)(command)

    return options


def apply(batches, names: tuple[str, ...], path: str | None, report_path: str | None, what: str):
    """Change the entries of NAMES or FILE by `batches(engine, names, actor)` (a
    crawler.db.rules.deny_entries writer). Names given: a line each. A file: progress, summary,
    exit 1 if anything was refused."""
    if bool(names) == bool(path):
        raise click.UsageError("give names or -f FILE (one of them)")

    def change(items):
        return batches(engine(), items, ACTOR)

    if path is None:
        report([c for batch in change(names) for c in batch], registered_domain_hint)
    else:
        finish(run_file(path, what, change, report_path))


def registered_domain_hint(change: EntryChange) -> str | None:
    """A pasted URL or a www. name stores that host and the names under it, not its
    site's other names: the registered domain is named, to add it if that was meant."""
    pasted = "/" in change.input or change.input.lower().startswith("www.")
    if not change.ok or change.hostname is None or not pasted:
        return None
    domain = root(change.hostname)
    if domain == change.hostname:
        return None
    return (
        f"  note: only {change.hostname} and the names under it; {domain} and its other"
        f" names stay crawlable: add {domain} for the whole site"
    )


@click.group("no-follow")
def no_follow() -> None:
    """Operator entries whose hosts are never saved nor crawled."""


@no_follow.command("add")
@click.argument("domains", nargs=-1)
@click.option("--force", is_flag=True, help="Accept a bare public suffix such as 'com'.")
@entry_change(
    "A list or block list ('-': stdin).", "Why (kept with the entry and in the change log)."
)
def no_follow_add(domains: tuple[str, ...], path, note: str | None, force: bool, report_path):
    """Add DOMAINS (or the names in FILE) to no_follow."""
    add = partial(deny_entries.add_no_follow_batches, note=note, force=force)
    apply(add, domains, path, report_path, "no_follow add")


@no_follow.command("remove")
@click.argument("domains", nargs=-1)
@entry_change("A list ('-': stdin).")
def no_follow_remove(domains: tuple[str, ...], path, note: str | None, report_path) -> None:
    """Remove DOMAINS (or the names in FILE) from no_follow."""
    remove = partial(deny_entries.remove_no_follow_batches, note=note)
    apply(remove, domains, path, report_path, "no_follow remove")


@no_follow.command("list")
@friendly_errors
def no_follow_list() -> None:
    """Print every no_follow entry (and its note)."""
    for entry in deny_entries.list_entries(engine(), "no_follow"):
        note = f"\t{entry['note']}" if entry["note"] else ""
        click.echo(f"{entry['hostname']}{note}")


@click.group()
def blocked() -> None:
    """Hosts blocked automatically (subdomain generators)."""


@blocked.command("list")
@friendly_errors
def blocked_list() -> None:
    """Print every blocked host and its blocked_reason."""
    for entry in deny_entries.list_entries(engine(), "blocked"):
        click.echo(f"{entry['hostname']}\t{entry['blocked_reason']}")


@blocked.command("unblock")
@click.argument("hosts", nargs=-1)
@entry_change("A list ('-': stdin).")
def blocked_unblock(hosts: tuple[str, ...], path, note: str | None, report_path) -> None:
    """Unblock HOSTS (or those in FILE); the hosts their blocks took out come back."""
    unblock = partial(deny_entries.unblock_batches, note=note)
    apply(unblock, hosts, path, report_path, "unblock")
