"""`scrapy audit`: the DNS/TLS audit of due hosts, with the crawl's settings."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from datetime import timedelta

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.utils.log import configure_logging
from scrapy.utils.reactor import install_reactor

from crawler.core.hostnames import HostnameError, normalize

ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def short_desc(self) -> str:
        return "Resolve due hosts (and optionally shake hands over TLS) without fetching pages"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--limit", type=int, metavar="N", help="audit at most N hosts")
        parser.add_argument("--root", metavar="DOMAIN", help="only hosts at or under DOMAIN")
        parser.add_argument("--dry-run", action="store_true", help="claim and write nothing")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from crawler.addon import HostcrawlAddon

        # No crawler is made here, so Scrapy applies no add-on: the crawl's settings come
        # from the add-on all the same (at its priority, below -s and the project's).
        HostcrawlAddon.update_settings(None, self.settings)
        options = self.audit_options(opts)
        configure_logging(self.settings)
        install_reactor(ASYNCIO_REACTOR)
        from twisted.internet import reactor

        progress = reactor_run(reactor, self.settings, options)
        print(progress.summary())
        if progress.blocked:
            logging.getLogger(__name__).warning("blocked: %s", ", ".join(progress.blocked))

    def audit_options(self, opts: argparse.Namespace):
        from crawler.db.rules.dns_audits import Backoff
        from crawler.rules.dns_audit import AuditOptions

        s = self.settings
        if opts.limit is not None and opts.limit < 1:
            raise UsageError(f"--limit {opts.limit}: must be at least 1")
        root = None
        if opts.root:
            try:
                root = normalize(opts.root)
            except HostnameError as exc:
                raise UsageError(f"--root: {exc}") from None
        return AuditOptions(
            concurrency=s.getint("AUDIT_CONCURRENCY"),
            tls=s.getbool("AUDIT_TLS"),
            tls_port=s.getint("AUDIT_TLS_PORT"),
            tls_timeout=s.getfloat("AUDIT_TLS_TIMEOUT"),
            limit=opts.limit,
            root=root,
            dry_run=opts.dry_run,
            lease=timedelta(seconds=s.getint("CLAIM_LEASE")),
            backoff=Backoff(
                timedelta(seconds=s.getint("AUDIT_BACKOFF_BASE")),
                timedelta(seconds=s.getint("AUDIT_BACKOFF_MAX")),
            ),
            window=s.getint("TRAP_WINDOW"),
            progress_every=s.getfloat("AUDIT_PROGRESS_EVERY"),
        )


def reactor_run(reactor, settings, options):
    """Run one audit on the asyncio reactor and return its Progress."""
    from crawler.network.resolver import OutcomeResolver
    from crawler.rules.dns_audit import Audit
    from crawler.rules.self_check import SelfCheck
    from crawler.rules.world_check import WorldCheck
    from crawler.shared import canary_hosts, crawl_engine, url_templates

    resolver = OutcomeResolver.from_settings(settings, reactor)
    engine = crawl_engine()
    world = WorldCheck(
        engine,
        lambda: resolver,
        url_templates(settings),
        canary_hosts(settings),
        timeout=settings.getfloat("DNS_TIMEOUT"),
        dns_only=not options.tls,
    )
    confirm = SelfCheck(engine, world).confirm
    outcome: dict = {}

    async def main() -> None:
        try:
            outcome["progress"] = await Audit(
                engine, resolver, options, say=_say, confirm=confirm
            ).run()
        except BaseException as exc:  # reported after the reactor stops
            outcome["error"] = exc
        finally:
            reactor.stop()

    reactor.callWhenRunning(lambda: asyncio.ensure_future(main()))
    reactor.run(installSignalHandlers=True)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["progress"]


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
