"""Every setting of hostcrawl, declared once: its name, default, type and meaning.

The crawler (through the add-on, at its priority: `-s` and a project's own settings
win), the CLI and the panel read their values here, from the same environment;
`hostcrawl settings` prints them with where each came from, and `.env.example` is
written from this table. Pure: the environment is passed in, nothing is read here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from crawler.core.setting import CLI, CRAWL, PANEL, Setting, SettingError
from crawler.core.workers import WorkerCount

__all__ = ["CLI", "CRAWL", "PANEL", "SETTINGS", "Setting", "SettingError"]

DAY = 86400
SETTINGS: tuple[Setting, ...] = (
    # --- what the crawl fetches and how it resolves ---
    Setting("HOST_URL_TEMPLATE", "https://{hostname}/", str, "the front page URL of a host"),
    Setting(
        "HTTP_FALLBACK_TEMPLATE",
        "http://{hostname}/",
        str,
        "tried once when https fails below HTTP (TCP, TLS); empty = off",
    ),
    Setting("DNS_NAMESERVERS", "", str, "host:port,... for the resolver; empty = the system's"),
    Setting(
        "DNS_TIMEOUT",
        5.0,
        float,
        "seconds a DNS server may take to answer; one retry, then DNS_TIMEOUT",
        minimum=0.1,
    ),
    Setting(
        "CONNECT_TIMEOUT",
        5.0,
        float,
        "seconds a TCP connect may take, and again the TLS handshake (apart from DOWNLOAD_TIMEOUT)",
        minimum=0.1,
    ),
    Setting(
        "IDLE_CONNECTION_TIMEOUT",
        5.0,
        float,
        "seconds an idle connection waits for its host's next request (robots.txt, then the page)",
        minimum=0,
    ),
    # --- the trap rule ---
    Setting(
        "TRAP_WINDOW",
        50,
        int,
        "unique subdomains per root that must all fail below HTTP to block it",
        readers=(CRAWL, PANEL),
        minimum=1,
    ),
    Setting(
        "TRAP_NEAR_BLOCK",
        40,
        int,
        "failures in a root's window from which /roots marks it near a block",
        readers=(PANEL,),
        minimum=1,
    ),
    Setting(
        "CANARY_HOSTS",
        "",
        str,
        "comma list asked before a block; empty = hosts that ever answered OK in this database",
    ),
    Setting(
        "OUTAGE_RETRY_AFTER",
        15.0,
        float,
        "seconds until a host that failed while no canary answered is tried again",
        minimum=0,
    ),
    Setting(
        "TRAP_RECHECK_INTERVAL", 30.0, float, "seconds between looks at deferred blocks", minimum=1
    ),
    # --- claiming ---
    Setting(
        "CLAIM_BATCH",
        32,
        int,
        "fewest hosts claimed at a time; a claim fills the room up to the in-flight limit",
        minimum=1,
    ),
    Setting(
        "CLAIM_LEASE",
        600,
        int,
        "seconds a claim holds before another worker may take the host",
        minimum=1,
    ),
    Setting(
        "CLAIM_POLL_INTERVAL", 2.0, float, "seconds between claims while nothing is due", minimum=0
    ),
    Setting("RECRAWL_AFTER", 7 * DAY, int, "seconds until a crawled host is due again", minimum=0),
    Setting(
        "DISCOVERY_SOURCES",
        "all",
        str,
        "source groups hostnames are read from: all, or a comma list of links, resources,"
        " metadata, scripts, headers, redirects, certificate, dns, robots",
    ),
    Setting(
        "LOCAL_SUFFIXES",
        "",
        str,
        "comma list of suffixes of a private or test network (test, corp.example) whose"
        " names are taken though the Public Suffix List does not know them",
        readers=(CRAWL, PANEL, CLI),
    ),
    Setting(
        "CLOSE_WHEN_DRAINED",
        False,
        bool,
        "1 = stop when nothing is due and no worker holds a claim",
    ),
    Setting(
        "MAX_IN_FLIGHT",
        1000,
        int,
        "most hosts a worker keeps in flight; it sizes itself below this by CPU and memory",
        minimum=1,
    ),
    Setting(
        "MEMORY_BUDGET_MB",
        500,
        int,
        "MB of resident memory a worker keeps under by lowering its hosts in flight",
        minimum=50,
    ),
    Setting(
        "ROOT_CONCURRENCY",
        2,
        int,
        "hosts of one root claimed and unfinished at once, across all workers",
        minimum=1,
    ),
    Setting(
        "ROOT_BUDGET",
        3600,
        int,
        "hosts of one root claimed per rolling hour, across all workers",
        readers=(CRAWL, PANEL),
        minimum=1,
    ),
    Setting(
        "DENYLIST_RELOAD",
        60.0,
        float,
        "seconds between a worker's full deny-list reloads (besides LISTEN/NOTIFY)",
        minimum=1,
    ),
    Setting(
        "ALLOW_PRIVATE_HOSTS",
        False,
        bool,
        "1 = seeds may be localhost or loopback/private/link-local addresses",
        readers=(CLI,),
    ),
    # --- the DNS/TLS audit (`scrapy audit`) ---
    Setting("AUDIT_CONCURRENCY", 200, int, "DNS lookups in flight in the audit", minimum=1),
    Setting("AUDIT_TLS", False, bool, "1 = the audit also does a TLS handshake"),
    Setting("AUDIT_TLS_PORT", 443, int, "the port of the audit's TLS handshake", minimum=1),
    Setting("AUDIT_TLS_TIMEOUT", 5.0, float, "seconds the audit's handshake may take", minimum=0.1),
    Setting(
        "AUDIT_BACKOFF_BASE",
        3600,
        int,
        "seconds; a host the audit found dead k times in a row waits base * 2^k",
        minimum=1,
    ),
    Setting("AUDIT_BACKOFF_MAX", 30 * DAY, int, "seconds; the longest audit back-off", minimum=1),
    Setting(
        "AUDIT_PROGRESS_EVERY",
        5.0,
        float,
        "seconds between the audit's progress lines",
        minimum=0.1,
    ),
    # --- the workers: how many `make run` starts, and their metrics and log ---
    Setting(
        "CRAWL_WORKERS",
        WorkerCount("auto"),
        WorkerCount,
        "crawler processes `make run` starts; auto = 9 per 10 cores (docs/scaling.md)",
        readers=(CLI,),
    ),
    Setting("WORKER_NAME", "", str, "a worker's name (claims, logs, panel); empty = host:pid"),
    Setting("METRICS_PORT", 0, int, "port of a worker's Prometheus /metrics; 0 = off", minimum=0),
    Setting(
        "METRICS_ADDRESS",
        "127.0.0.1",
        str,
        "address /metrics listens on (0.0.0.0 in a container)",
    ),
    Setting("LOG_LEVEL", "INFO", str, "the crawl's log level"),
    # --- the panel ---
    Setting(
        "SECRET_KEY",
        "",
        str,
        "signs the panel's session cookies; empty = one kept in var/secret_key",
        readers=(PANEL,),
        secret=True,
        group="panel",
    ),
    Setting(
        "SESSION_COOKIE_SECURE",
        True,
        bool,
        "1 = the session cookie is Secure when the browser came over https (or a proxy says"
        " X-Forwarded-Proto: https), plain over plain http, where a browser would drop it;"
        " 0 = never Secure",
        readers=(PANEL,),
        group="panel",
    ),
    Setting(
        "PANEL_SESSION_HOURS",
        12.0,
        float,
        "idle hours before a panel session expires",
        readers=(PANEL,),
        minimum=0.01,
        group="panel",
    ),
    Setting(
        "PANEL_SESSION_MAX_HOURS",
        24.0,
        float,
        "hours after its login that a panel session ends, however often it is used",
        readers=(PANEL,),
        minimum=0.01,
        group="panel",
    ),
    Setting(
        "PANEL_TRUSTED_PROXIES",
        0,
        int,
        "proxies in front of the panel that set X-Forwarded-For; 0 = none",
        readers=(PANEL,),
        minimum=0,
        group="panel",
    ),
    Setting(
        "PANEL_LOGIN_HASH_SLOTS",
        1,
        int,
        "password checks at once per panel process",
        readers=(PANEL,),
        minimum=1,
        group="panel",
    ),
    Setting(
        "PANEL_CONNECTIONS_PER_ADDRESS",
        100,
        int,
        "open connections one client address may hold per panel process; the rest get 429",
        readers=(PANEL,),
        minimum=1,
        group="panel",
    ),
    Setting(
        "PANEL_REQUEST_READ_SECONDS",
        10.0,
        float,
        "seconds a request's headers and body may take to arrive before the panel answers 408",
        readers=(PANEL,),
        minimum=0.1,
        group="panel",
    ),
    Setting(
        "PANEL_STATS_TTL",
        30.0,
        float,
        "seconds the dashboard's figures are kept before they are recomputed; 0 = always",
        readers=(PANEL,),
        minimum=0,
        group="panel",
    ),
    # --- the database ---
    Setting(
        "DATABASE_URL",
        "",
        str,
        "postgresql+psycopg://user:pass@host/db; empty = the embedded server under var/",
        readers=(CRAWL, PANEL, CLI),
        group="database",
    ),
    Setting(
        "DATABASE_POOLED",
        False,
        bool,
        "1 = DATABASE_URL is PgBouncer in transaction mode (no prepared statements)",
        readers=(CRAWL, PANEL, CLI),
        group="database",
    ),
    Setting(
        "DATABASE_LISTEN_URL",
        "",
        str,
        "a direct (unpooled) URL for LISTEN; empty = DATABASE_URL",
        readers=(CRAWL,),
        group="database",
    ),
    Setting(
        "HOSTCRAWL_VAR",
        "var",
        str,
        "folder of the embedded server's data and the panel's key, relative to the repo",
        readers=(CRAWL, PANEL, CLI),
        group="database",
    ),
    # --- retention: each worker prunes on a schedule; `hostcrawl prune` by hand ---
    Setting(
        "PRUNE_INTERVAL",
        3600,
        int,
        "seconds between a worker's prunes (one process at a time across workers); 0 = off",
        minimum=0,
        group="retention",
    ),
    Setting(
        "CHANGE_LOG_RETENTION_DAYS",
        90,
        int,
        "days of the operators' change log kept; 0 = all",
        readers=(CRAWL, CLI),
        minimum=0,
        group="retention",
    ),
    Setting(
        "PROBE_RETENTION_DAYS",
        30,
        int,
        "days of wildcard probes kept (older roots are probed again); 0 = all",
        readers=(CRAWL, CLI),
        minimum=0,
        group="retention",
    ),
    Setting(
        "ROOT_CLAIMS_RETENTION_MINUTES",
        65,
        int,
        "minutes of per-root claim counts kept (the budget reads the last 61)",
        readers=(CRAWL, CLI),
        minimum=61,
        group="retention",
    ),
    Setting(
        "HOST_HOURS_RETENTION_DAYS",
        30,
        int,
        "days of hourly host counts kept (the dashboard reads 24 hours); 0 = all",
        readers=(CRAWL, CLI),
        minimum=0,
        group="retention",
    ),
    Setting(
        "TRAP_WINDOW_RETENTION_DAYS",
        30,
        int,
        "days an outcome stays in its root's trap window; 0 = until newer ones push it out",
        readers=(CRAWL, CLI),
        minimum=0,
        group="retention",
    ),
    Setting(
        "DEFERRAL_RETENTION_DAYS",
        7,
        int,
        "days a held-back block no worker looked at again is kept; 0 = all",
        readers=(CRAWL, CLI),
        minimum=0,
        group="retention",
    ),
)
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    try:
        return BY_NAME[name]
    except KeyError:
        raise SettingError(f"{name}: no such setting") from None


def from_environment(name: str, environ: Mapping[str, str]) -> Any:
    """A setting's value: the environment's when set and not empty, else its default."""
    declared = setting(name)
    raw = environ.get(name)
    if raw is None or (not raw.strip() and declared.kind is not str):
        return declared.default
    return declared.parse(raw)


def effective(environ: Mapping[str, str]) -> Iterator[tuple[Setting, Any, str]]:
    """Every setting with its value and where it came from: "default" or "environment"."""
    for declared in SETTINGS:
        value = from_environment(declared.name, environ)
        source = "environment" if declared.name in environ else "default"
        yield declared, value, source


ENV_EXAMPLE_MARK = "# === hostcrawl settings: written by `hostcrawl settings --env-example` ==="


def env_example() -> str:
    """`.env.example`'s settings part: every setting at its default, commented out but for
    the secrets, which a deployment must fill in."""
    lines = [ENV_EXAMPLE_MARK]
    group = None
    for declared in SETTINGS:
        if declared.group != group:
            group = declared.group
            lines += ["", f"# --- {group} " + "-" * (74 - len(group))]
        readers = ", ".join(declared.readers)
        lines.append(f"# {declared.meaning} (read by: {readers})")
        if declared.secret:
            lines.append(f"{declared.name}=")
        else:
            lines.append(f"# {declared.name}={declared.shown(declared.default)}")
    return "\n".join(lines) + "\n"
