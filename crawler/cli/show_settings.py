"""`hostcrawl settings`: every setting, its effective value and where it came from."""

from __future__ import annotations

import os

import click

from crawler.cli.common import friendly_errors
from crawler.core import config
from crawler.core.worker_count import WorkerCount
from crawler.db import machine
from crawler.db.server_settings import embedded_memory


@click.command("settings")
@click.option("--env-example", is_flag=True, help="Print the settings part of .env.example.")
@click.option("--markdown", is_flag=True, help="Print the settings table of docs/settings.md.")
@friendly_errors
def show_settings(env_example: bool, markdown: bool) -> None:
    """Print each setting of crawler/core/config.py: value, source (default or environment),
    who reads it and what it means. A Scrapy run's `-s` overrides show in its log."""
    if env_example or markdown:
        click.echo(config.env_example() if env_example else markdown_table(), nl=False)
        return
    rows = [
        (
            declared.name,
            shown(declared, value),
            source,
            ",".join(declared.readers),
            declared.meaning,
        )
        for declared, value, source in config.effective(os.environ)
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[4]]).rstrip())


def shown(declared: config.Setting, value) -> str:
    """The value as the operator reads it; CRAWL_WORKERS and EMBEDDED_DATABASE_MEMORY_MB
    with what they come to on this machine."""
    if isinstance(value, WorkerCount):
        return f"{value} (= {value.effective(machine.cores())})"
    if declared.name == "EMBEDDED_DATABASE_MEMORY_MB" and not value:
        return f"0 (= {embedded_memory().mb} MB)"
    return declared.shown(value)


def markdown_table() -> str:
    """The table of docs/settings.md: every setting, its default, who reads it and what it means."""
    lines = ["| setting | default | read by | meaning |", "|---|---|---|---|"]
    for declared in config.SETTINGS:
        default = declared.shown(declared.default) or "(empty)"
        meaning = declared.meaning.replace("|", "\\|")
        readers = ", ".join(declared.readers)
        lines.append(f"| `{declared.name}` | `{default}` | {readers} | {meaning} |")
    return "\n".join(lines) + "\n"
