"""Why the world does not answer us: the failing layer, its top error, the counts and the
settings to check (crawler.core.outages), in the log, the banner and on a host's page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from crawler.core.outages import (
    DNS,
    NETWORK,
    FailureTally,
    LayerFailures,
    settings_to_check,
    why_silent,
)
from crawler.db.crawl import queue
from crawler.db.rules import world_silences
from webpanel.queries import host_rows

pytest_plugins = ["tests.unit.test_panel_support"]

NO_CANARY = "no host has answered yet in this database"


def test_thirty_failed_lookups_name_dns_their_error_and_the_settings():
    tally = FailureTally(span=60)
    for i in range(30):
        tally.failed(DNS, "DNS_TIMEOUT", now=1000 + i / 10)
    failures = tally.failing(now=1003)
    check = settings_to_check(DNS, "127.0.0.1:9", [], 10)
    assert why_silent(failures, 60, check, NO_CANARY) == (
        "DNS: 30 of 30 lookups failed in the last minute, all DNS_TIMEOUT"
        " (DNS_NAMESERVERS=127.0.0.1:9; no CANARY_HOSTS set); " + NO_CANARY
    )


def test_answers_count_as_tries_and_the_commonest_error_leads():
    tally = FailureTally(span=10)
    for _ in range(5):
        tally.answered(DNS, now=0)
    for outcome in ["DNS_SERVFAIL"] * 3 + ["DNS_TIMEOUT"]:
        tally.failed(DNS, outcome, now=1)
    assert tally.failing(now=2) == LayerFailures(DNS, 9, 4, "DNS_SERVFAIL", 3)
    assert tally.failing(now=2).describe(10) == (
        "DNS: 4 of 9 lookups failed in the last 10 s, 3 DNS_SERVFAIL"
    )


def test_the_layer_failing_most_is_named_and_old_tries_are_forgotten():
    tally = FailureTally(span=60)
    tally.failed(DNS, "DNS_TIMEOUT", now=0)
    for _ in range(3):
        tally.failed(NETWORK, "TCP_TIMEOUT", now=30)
    assert tally.failing(now=31).layer == NETWORK
    assert tally.failing(now=100) is None  # a minute later: nothing in the span
    assert settings_to_check(NETWORK, "", ["a.test", "b.test"], 10) == (
        "this machine's network or firewall; CONNECT_TIMEOUT=10; CANARY_HOSTS=a.test,b.test"
    )
    assert settings_to_check(DNS, "", [], 5).startswith(
        "the system's resolver in /etc/resolv.conf, as DNS_NAMESERVERS is unset"
    )


def test_without_a_failure_tallied_the_verdict_alone_is_the_reason():
    assert why_silent(None, 60, "", NO_CANARY) == NO_CANARY


def held_back(db, names: list[str], outcome: str = "DNS_TIMEOUT") -> None:
    queue.retry_soon(db, names, timedelta(seconds=30), outcome)


def test_two_workers_holding_the_same_hosts_back_count_them_once(db):
    names = ["a.quiet.test", "b.quiet.test", "c.quiet.test"]
    queue.save_hosts(db, names)
    since = datetime.now(UTC) - timedelta(seconds=5)
    reason = world_silences.Reason(LayerFailures(DNS, 3, 3, "DNS_TIMEOUT", 3), 60, "DNS_X=1")
    held_back(db, names)  # worker 1 tried the three, then worker 2 the same three
    world_silences.report(db, "w1:1", since, never=True, held_back=3, reason=reason)
    held_back(db, names)
    world_silences.report(db, "w2:2", since, never=True, held_back=3, reason=reason)
    with db.connect() as conn:
        silence = world_silences.current(conn)
    assert silence.workers == 2 and silence.held_back == 3  # not 6
    # The tries add up: each worker's are its own.
    assert silence.failures == LayerFailures(DNS, 6, 6, "DNS_TIMEOUT", 6)
    assert silence.describe() == "DNS: 6 of 6 lookups failed in the last minute, all DNS_TIMEOUT"


def test_a_host_page_shows_its_tries_held_back_and_the_last_error(db, client):
    queue.save_hosts(db, ["n1.quiet.test"])
    for _ in range(10):
        held_back(db, ["n1.quiet.test"])
    with db.connect() as conn:
        host = host_rows.host_detail(conn, "n1.quiet.test")
    assert (host.held_tries, host.held_outcome) == (10, "DNS_TIMEOUT")
    html = " ".join(client.get("/hosts/n1.quiet.test").get_data(as_text=True).split())
    assert "0 crawls, 0 failures in a row" in html
    assert "10 tries held back while the world did not answer us (not counted)" in html
    assert "the last: DNS_TIMEOUT (no DNS answer in time: the resolver" in html


def test_the_banner_names_the_failing_layer_and_the_settings(db, client):
    names = ["a.quiet.test", "b.quiet.test"]
    queue.save_hosts(db, names)
    since = datetime.now(UTC) - timedelta(seconds=5)
    held_back(db, names)
    reason = world_silences.Reason(
        LayerFailures(DNS, 30, 30, "DNS_TIMEOUT", 30),
        60,
        settings_to_check(DNS, "127.0.0.1:9", [], 10),
    )
    world_silences.report(db, "w1:1", since, never=True, held_back=2, reason=reason)
    html = " ".join(client.get("/no_follow").get_data(as_text=True).split())
    assert (
        "DNS: 30 of 30 lookups failed in the last minute, all DNS_TIMEOUT</strong>"
        " (check DNS_NAMESERVERS=127.0.0.1:9; no CANARY_HOSTS set)."
    ) in html
    assert "(2 failing hosts tried again, not settled)" in html
    world_silences.clear(db, "w1:1")
