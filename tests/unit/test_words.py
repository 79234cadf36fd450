"""The crawler's and the panel's words (issue 53, item 6): a count agrees with its noun,
a summary reads "3 added, 2 already there", a hint names the real flag, a setting left
unset reads as a sentence, and NXDOMAIN means the name does not exist."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from crawler.cli.bulkrun import Summary
from crawler.core.blocklists import Skipped
from crawler.core.hostnames import HostnameError, normalize_entry, seed_refusal
from crawler.core.outages import DNS, NETWORK, settings_to_check
from crawler.core.outcomes import DNS_NXDOMAIN, MEANINGS
from crawler.core.words import counted
from crawler.db.crawl import queue
from crawler.db.crawl.heartbeats import Progress
from crawler.db.operators.bulk import EntryChange
from crawler.db.rules.world_silences import Silence
from crawler.runner.console import silence_words

pytest_plugins = ["tests.unit.test_panel_support"]


@pytest.mark.parametrize(
    ("count", "noun", "nouns", "said"),
    [
        (0, "host", None, "0 hosts"),
        (1, "host", None, "1 host"),
        (2, "host", None, "2 hosts"),
        (1_234_567, "line", None, "1,234,567 lines"),
        (1, "entry", "entries", "1 entry"),
        (3, "entry", "entries", "3 entries"),
        (1, "try", "tries", "1 try"),
        (1, "host was", "hosts were", "1 host was"),
    ],
)
def test_a_count_agrees_with_its_noun(count, noun, nouns, said):
    assert counted(count, noun, nouns) == said


def silence(held_back: int) -> Silence:
    return Silence(1, datetime.now(UTC), False, held_back)


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        (lambda: silence_words(silence(1)), "1 host held back, blocks held"),
        (lambda: silence_words(silence(3)), "3 hosts held back, blocks held"),
        (lambda: Skipped(Counter(comment=1)).describe(), "1 line skipped (1 comment)"),
        (lambda: Skipped(Counter(comment=2)).describe(), "2 lines skipped (2 comment)"),
        (
            lambda: Progress(1, 1, 0.5, 1, 0, held_back=1).describe(),
            "1 worker alive, 1 page (0.5/s), 1 host known, 0 due now, 0 in flight,"
            " 1 host held back by an outage",
        ),
        (
            lambda: Progress(2, 1_000, 2.0, 7, 3, in_flight=2).describe(),
            "2 workers alive, 1,000 pages (2.0/s), 7 hosts known, 3 due now, 2 in flight",
        ),
    ],
    ids=["held-1", "held-3", "skipped-1", "skipped-2", "progress-1", "progress-2"],
)
def test_plurals_agree_in_the_consoles_and_summaries_lines(said, expected):
    assert said().endswith(expected) or said() == expected, said()


@pytest.mark.parametrize(
    ("statuses", "line"),
    [
        (["already"] * 3, "done: 3 already there"),
        (["added", "added", "already"], "done: 2 added, 1 already there"),
        (["queued", "refused"], "done: 1 queued, 1 refused"),
        (["unblocked", "absent"], "done: 1 unblocked, 1 not there"),
        ([], "done: nothing to do"),
    ],
)
def test_the_bulk_summary_says_the_count_then_what_was_done(statuses, line):
    summary = Summary()
    for i, status in enumerate(statuses):
        summary.add(EntryChange(f"h{i}.test", f"h{i}.test", status, "why" * (status == "refused")))
    assert summary.lines(Skipped())[0] == line


@pytest.mark.parametrize(
    "refusal",
    [
        lambda: seed_refusal("intranet"),
        lambda: seed_refusal("co.uk"),
        lambda: normalize_entry("com"),
    ],
    ids=["single-label", "public-suffix-seed", "public-suffix-entry"],
)
def test_every_hint_names_the_real_flag(refusal):
    try:
        said = refusal()
    except HostnameError as exc:
        said = str(exc)
    assert "(--force to " in said and "(force to" not in said, said


@pytest.mark.parametrize(
    ("layer", "nameservers", "said"),
    [
        (DNS, "", "the system's resolver in /etc/resolv.conf, as DNS_NAMESERVERS is unset"),
        (DNS, "127.0.0.1:9", "DNS_NAMESERVERS=127.0.0.1:9"),
        (NETWORK, "", "this machine's network or firewall; CONNECT_TIMEOUT=10"),
    ],
)
def test_the_settings_to_check_read_after_check(layer, nameservers, said):
    assert settings_to_check(layer, nameservers, [], 10) == f"{said}; no CANARY_HOSTS set"


def test_nxdomain_means_the_name_does_not_exist_not_that_nobody_answered():
    assert MEANINGS[DNS_NXDOMAIN].startswith("the name does not exist")
    assert "did not answer" not in MEANINGS[DNS_NXDOMAIN]


@pytest.mark.parametrize(
    ("outcome", "tries", "said"),
    [
        (
            "DNS_NXDOMAIN",
            1,
            "1 try held back while the world did not answer us (not counted);"
            " the last: DNS_NXDOMAIN (the name does not exist",
        ),
        (
            "DNS_TIMEOUT",
            2,
            "2 tries held back while the world did not answer us (not counted);"
            " the last: DNS_TIMEOUT (no DNS answer in time",
        ),
    ],
)
def test_a_host_page_says_what_its_last_held_try_meant(db, client, outcome, tries, said):
    queue.save_hosts(db, ["n1.quiet.test"])
    for _ in range(tries):
        queue.retry_soon(db, ["n1.quiet.test"], timedelta(seconds=30), outcome)
    html = " ".join(client.get("/hosts/n1.quiet.test").get_data(as_text=True).split())
    assert said in html
    assert "0 crawls, 0 failures in a row" in html
