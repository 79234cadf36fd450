"""The crawl's settings: what it fetches, the trap rule, claiming, the audit and the workers.

Declared here, read through crawler.core.config (one table of every setting)."""

from __future__ import annotations

from crawler.core.setting_declaration import CLI, CRAWL, PANEL, Setting
from crawler.core.worker_count import WorkerCount

DAY = 86400
CRAWL_SETTINGS: tuple[Setting, ...] = (
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
    # --- what one response may cost: names saved, reading time, header bytes ---
    Setting(
        "MAX_NAMES_PER_PAGE",
        6000,
        int,
        "new names one host's fetch may save, every source and redirect hop together",
        minimum=1,
    ),
    Setting(
        "MAX_NAMES_PER_ROOT_PER_PAGE",
        1000,
        int,
        "of MAX_NAMES_PER_PAGE, names under any one root",
        minimum=1,
    ),
    Setting(
        "MAX_EXTRACT_SECONDS",
        1.0,
        float,
        "seconds of reading one host's fetch may take (a response over 64 KiB is read beside"
        " the other hosts, a smaller one in the worker's loop)",
        minimum=0,
    ),
    Setting(
        "MAX_HEADER_BYTES",
        256 * 1024,
        int,
        "bytes of status line and headers a response may send (HTTP_TOO_LARGE past it)",
        minimum=1024,
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
        "CANARY_INTERVAL",
        10.0,
        float,
        "seconds before a host the crawl or a check contacted is asked again as a canary",
        minimum=0,
    ),
    Setting(
        "OUTAGE_RETRY_AFTER",
        15.0,
        float,
        "seconds between asks whether the world answers again (at the layer that failed)"
        " while it does not; sooner when the crawl hears an answer; the hosts held back"
        " meanwhile are asked again once it does",
        minimum=0.1,
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
        "KNOWN_NAMES",
        100_000,
        int,
        "names a worker remembers as saved, left out of its writes (about 170 B each; 0: off)",
        minimum=0,
    ),
    Setting(
        "ROBOTS_UNREACHABLE_RETRY_AFTER",
        DAY,
        int,
        "seconds until a host whose robots.txt was unreachable (HTTP_ROBOTS_UNREACHABLE:"
        " complete disallow, RFC 9309) is tried again",
        minimum=0,
    ),
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
    # --- the public-address rule (crawler/core/addresses.py) ---
    Setting(
        "ALLOWED_PRIVATE_NETWORKS",
        "",
        str,
        "comma list of CIDRs of a private or test network (127.0.0.1/32) the crawl may"
        " connect to and save, and seed; every other non-public address is refused"
        " (ADDRESS_REFUSED)",
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
        0,
        int,
        "most hosts a worker keeps in flight; 0 = as many as MEMORY_BUDGET_MB and the open"
        " files limit hold (docs/scaling.md); it sizes itself below this by CPU and memory",
        minimum=0,
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
        "deprecated (ALLOWED_PRIVATE_NETWORKS names the networks seeds and crawl may reach):"
        " 1 = seeds may be localhost or loopback/private/link-local addresses",
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
)
