"""Only the world's silence is our outage (crawler.core.outages): which failures may be
it, when the crawl's own answers say the world answers, and when failures with no
canary to ask are an outage. Pure rules, and the evidence they are fed
(crawler.rules.evidence)."""

from __future__ import annotations

import pytest

from crawler.core import outcomes
from crawler.core.outages import (
    NEVER,
    SEVERAL_ROOTS,
    SILENCES,
    Heard,
    crawl_says_it_answers,
    is_silence,
    silence_without_canary,
)
from crawler.rules.evidence import DNS, NETWORK, Evidence

OUR_OWN_REFUSALS = [
    outcomes.ADDRESS_REFUSED,  # an address our rules do not let us reach
    outcomes.HTTP_TOO_LARGE,  # a size cap of ours
    outcomes.IGNORED,  # a deny entry
    outcomes.HTTP_ERROR,  # an answer we could not read
    outcomes.HTTP_UNFINISHED,  # a host that froze its workers
]
ANSWERS = [outcomes.OK, outcomes.DNS_ALIVE, outcomes.DNS_NOANSWER, outcomes.DNS_ERROR]


@pytest.mark.parametrize("outcome", OUR_OWN_REFUSALS + ANSWERS)
def test_a_refusal_of_ours_or_an_answer_is_never_the_worlds_silence(outcome):
    assert not is_silence(outcome)


@pytest.mark.parametrize(
    "outcome",
    ["DNS_TIMEOUT", "DNS_SERVFAIL", "DNS_REFUSED", "TCP_TIMEOUT", "TCP_REFUSED", "TLS_TIMEOUT"],
)
def test_nothing_answering_at_dns_tcp_or_tls_may_be_the_worlds_silence(outcome):
    assert is_silence(outcome)


def test_every_silence_is_a_kind_of_outcome_and_a_new_kind_is_outside_until_named():
    assert SILENCES.issubset(outcomes.ALL)
    assert not SILENCES & outcomes.REFUSED_BY_US
    assert not is_silence("SOME_NEW_OUTCOME") and not is_silence(None)


def test_an_answer_after_the_failure_began_says_the_world_answers():
    heard = Heard(last_answer=100.0, last_silence=101.0)
    assert crawl_says_it_answers(heard, began=99.0, now=130.0, recent=0.0)


def test_an_answer_a_moment_ago_with_nothing_failing_since_says_it_too():
    """The ordinary hosts answered a moment ago: no HEAD asks them to say it again."""
    heard = Heard(last_answer=100.0, last_silence=90.0)
    assert crawl_says_it_answers(heard, began=103.0, now=103.0, recent=10.0)
    assert not crawl_says_it_answers(heard, began=111.0, now=111.0, recent=10.0)  # too old


def test_an_answer_before_other_hosts_failed_says_nothing():
    """The leading edge of an outage: answers, then other hosts failing."""
    heard = Heard(last_answer=100.0, last_silence=102.0)
    assert not crawl_says_it_answers(heard, began=103.0, now=103.0, recent=10.0)


def test_nothing_heard_says_nothing():
    assert not crawl_says_it_answers(Heard(), began=NEVER, now=0.0, recent=10.0)


def test_with_no_canary_one_root_failing_is_that_roots_failure_and_several_are_ours():
    assert not silence_without_canary(Heard(roots_silent=1))
    assert not silence_without_canary(Heard(roots_silent=SEVERAL_ROOTS - 1))
    assert silence_without_canary(Heard(roots_silent=SEVERAL_ROOTS))


def test_the_evidence_counts_the_roots_failing_since_the_last_answer():
    evidence = Evidence()
    for name in ("a.one.test", "b.one.test", "x.two.test"):
        evidence.silent(name, DNS)
    assert evidence.heard_at(DNS, "a.one.test").roots_silent == 2
    evidence.heard("www.other.test", DNS)  # an answer: the count starts again
    evidence.silent("y.three.test", DNS)
    heard = evidence.heard_at(DNS, "y.three.test")
    assert heard.roots_silent == 1 and heard.last_answer > NEVER
    assert heard.last_silence < heard.last_answer  # its own failure is not counted against it
    assert evidence.heard_at(NETWORK, "y.three.test") == Heard()  # by layer


def test_the_failing_roots_own_answers_are_no_proof_for_it():
    evidence = Evidence()
    evidence.heard("www.trap.test", NETWORK)
    assert evidence.heard_at(NETWORK, "n1.trap.test").last_answer == NEVER
    assert evidence.heard_at(NETWORK, "n1.else.test").last_answer > NEVER
