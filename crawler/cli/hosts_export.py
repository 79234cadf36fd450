"""`hostcrawl hosts export`: what the crawl found, streamed to a file or stdout (the
spider that crawls hosts is crawler/spiders/hosts.py)."""

from __future__ import annotations

import sys
from datetime import UTC

import click

from crawler.cli.common import engine, friendly_errors
from crawler.core.hostnames import HostnameError
from crawler.core.outcomes import ALL as OUTCOMES
from crawler.db.operators import export
from crawler.db.operators.host_filter import MATCHES, NEVER_CRAWLED, PREFIX, HostFilter


def checked_outcome(outcome: str) -> str:
    """--outcome, refused (exit 1) unless it is an outcome or 'none'."""
    if outcome and outcome != NEVER_CRAWLED and outcome not in OUTCOMES:
        raise click.ClickException(
            f"--outcome {outcome}: no such outcome; give one of {', '.join(sorted(OUTCOMES))}"
            f", or {NEVER_CRAWLED} (never crawled)"
        )
    return outcome


@click.group()
def hosts() -> None:
    """The discovered hosts."""


@hosts.command("export")
@click.option(
    "--format", "fmt", type=click.Choice(export.FORMATS), default="csv", show_default=True
)
@click.option(
    "--outcome",
    default="",
    callback=lambda _ctx, _param, value: checked_outcome(value),
    help="Only this outcome ('none': never crawled).",
)
@click.option("--root", default="", help="Only hosts of this registered domain.")
@click.option(
    "--search", "q", default="", help="A hostname prefix, or a domain with --match domain."
)
@click.option("--match", type=click.Choice(MATCHES), default=PREFIX, show_default=True)
@click.option("--since", type=click.DateTime(), help="Only hosts discovered since (UTC).")
@click.option("--include-denied", is_flag=True, help="Names under a deny entry too.")
@click.option("-o", "--output", type=click.File("wb"), default="-", help="Default: stdout.")
@friendly_errors
def hosts_export(fmt, outcome, root, q, match, since, include_denied, output) -> None:
    """Stream the hosts, in constant memory: by default those the panel lists
    (never a name under a blocked or no_follow entry)."""
    since = since.replace(tzinfo=UTC) if since else None
    flt = HostFilter(
        q=q, match=match, outcome=outcome, root=root, since=since, include_denied=include_denied
    )
    try:
        if fmt == "csv":
            for chunk in export.csv_chunks(engine(), flt):
                output.write(chunk)
        else:
            for line in export.jsonl_lines(engine(), flt):
                output.write(line.encode())
    except HostnameError as exc:
        raise click.ClickException(f"{'--root' if root else '--search'}: {exc}") from None
    except BrokenPipeError:  # `| head`: the reader has had enough
        sys.stderr.close()
    output.flush()
