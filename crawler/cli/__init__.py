"""The `hostcrawl` command, one module per group.

Every command prints what it stored; bad input goes to stderr with the input
and the reason, and the exit status is 1 — never a traceback.
"""

from __future__ import annotations

import click

from crawler.cli import deny_commands, hosts_export, prune, schema, seeds, show_settings, users
from crawler.cli.common import Hostcrawl


@click.group(cls=Hostcrawl)
@click.version_option(
    package_name="hostcrawl", prog_name="hostcrawl", message="%(prog)s %(version)s"
)
def main() -> None:
    """hostcrawl: discover hostnames across the web."""


main.add_command(schema.db)
main.add_command(seeds.seed)
main.add_command(deny_commands.no_follow)
main.add_command(deny_commands.blocked)
main.add_command(users.user)
main.add_command(prune.prune)
main.add_command(hosts_export.hosts)
main.add_command(show_settings.show_settings)
