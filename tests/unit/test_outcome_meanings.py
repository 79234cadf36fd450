"""The outcomes named for what happened (issue 51): each fits the outcome columns, has a
layer and a group, is offered by the panel's filter, and its host page says what it means."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from crawler.core import outcomes
from crawler.db.crawl import queue
from crawler.db.models import Host

pytest_plugins = ["tests.unit.test_panel_support"]

NAMED = sorted(outcomes.MEANINGS)


@pytest.mark.parametrize("outcome", NAMED)
def test_each_fits_the_columns_and_has_a_layer_and_a_group(outcome):
    assert len(outcome) <= Host.__table__.c.outcome.type.length
    assert outcome in outcomes.ALL
    assert outcomes.layer_of(outcome) in outcomes.LAYERS
    assert outcomes.outcome_group(outcome) in {"HTTP", "NETWORK"}
    assert outcomes.counts_as_failed(outcome)


def test_only_the_certificate_and_the_dns_outcomes_feed_a_trap():
    """The HTTP ones are answers; a certificate that fails the handshake is TLS's, and
    the DNS outcomes named here are the lookups' (a generator's names fail there)."""
    trapped = {o for o in NAMED if outcomes.is_network_failure(o)}
    dns = {o for o in NAMED if outcomes.layer_of(o) == "DNS"}
    assert dns and trapped == {outcomes.TLS_CERTIFICATE} | dns


def test_the_host_page_says_what_the_outcome_means(client, db):
    queue.save_hosts(db, ["closed.test"])
    with db.begin() as conn:
        set_outcome = "UPDATE hosts SET outcome = 'HTTP_ROBOTS_UNREACHABLE'"
        conn.execute(text(set_outcome + " WHERE hostname = 'closed.test'"))
    page = client.get("/hosts/closed.test").get_data(as_text=True)
    assert "HTTP_ROBOTS_UNREACHABLE: its robots.txt timed out" in page
    assert "complete disallow (RFC 9309)" in page
    listing = client.get("/").get_data(as_text=True)  # the host list, its filter
    assert all(f'<option value="{outcome}"' in listing for outcome in NAMED)


def test_a_failed_fallback_keeps_the_https_tries_tls_outcome():
    """TLS failed at the host's https port, then plain HTTP was closed: TLS is what the
    host's outcome names. A fallback that got an answer, or an https try that failed
    below TLS, leaves the fallback's outcome."""
    from crawler.core.outcomes import told_over_the_fallback

    assert told_over_the_fallback("TLS_CERTIFICATE", "TCP_REFUSED") == "TLS_CERTIFICATE"
    assert told_over_the_fallback("TLS_HANDSHAKE", "TCP_RESET") == "TLS_HANDSHAKE"
    assert told_over_the_fallback("TLS_CERTIFICATE", "HTTP_TIMEOUT") == "HTTP_TIMEOUT"
    assert told_over_the_fallback("TCP_RESET", "TCP_REFUSED") == "TCP_REFUSED"
    assert told_over_the_fallback(None, "TCP_REFUSED") == "TCP_REFUSED"
