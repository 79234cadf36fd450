"""`hostcrawl ARGS` run in the test's own process, through click's CliRunner.

A real process costs a second of imports a command (more on a loaded machine), and the
suite runs a few hundred of them. In-process, a run shows what an operator's shows: the
exit status, stdout and stderr apart, WARNING log lines on stderr (Python's last resort
handler, as in a process where nothing configured logging), and an exception the command
let escape printed as the interpreter prints it (`Traceback ...`, status 1), so a test
that checks "no traceback" still sees one. Each run has its engine of its own, as each
process has (crawler.db.server.engine.get_engine caches one a process), made for the
DATABASE_URL of the moment and disposed at its end.

What only a real process shows (the entry point's exit status, `--version`) is checked
on real processes in tests/unit/test_cli.py.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass
from unittest import mock

from click.testing import CliRunner

from crawler.cli import main
from crawler.db.server import engine as engine_module


@dataclass(frozen=True)
class Ran:
    """What `hostcrawl ARGS` showed, named as subprocess.CompletedProcess names it."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class EnginesOfOneRun:
    """get_engine for one run: one engine a URL (the process's cache), all disposed after."""

    def __init__(self) -> None:
        self.make = engine_module.get_engine.__wrapped__  # get_engine without its cache
        self.made: dict = {}

    def __call__(self, url: str | None = None):
        if url not in self.made:
            self.made[url] = self.make(url)
        return self.made[url]

    def dispose(self) -> None:
        for engine in self.made.values():
            engine.dispose()


def hostcrawl(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> Ran:
    """Run `hostcrawl ARGS` with `stdin` on its standard input and `env` over os.environ."""
    engines = EnginesOfOneRun()
    root = logging.getLogger()
    root.addHandler(logging.lastResort)  # writes to the sys.stderr of the moment: the run's
    try:
        with mock.patch.object(engine_module, "get_engine", engines):
            result = CliRunner().invoke(main, list(args), input=stdin, env=env)
    finally:
        root.removeHandler(logging.lastResort)
        engines.dispose()
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return Ran(tuple(args), result.exit_code, result.stdout, stderr)
