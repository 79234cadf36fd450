"""The public-address rule: only public unicast addresses are the web."""

from __future__ import annotations

import pytest

from crawler.core.addresses import address_refusal, parse_networks
from crawler.core.denylist import DenyList
from crawler.core.hostnames import seed_refusal
from crawler.core.links import PRIVATE_ADDRESS, filter_found
from crawler.core.setting_declaration import SettingError

REFUSED = {
    "127.0.0.9": "a loopback address",
    "10.1.2.3": "a private address",
    "192.168.0.1": "a private address",
    "172.16.5.5": "a private address",
    "169.254.169.254": "a link-local address",
    "100.64.0.1": "a shared (carrier-grade NAT) address",
    "224.0.0.1": "a multicast address",
    "240.0.0.1": "a reserved address",
    "0.0.0.0": "an unspecified address",
    "::1": "a loopback address",
    "::": "an unspecified address",
    "fe80::1": "a link-local address",
    "fc00::1": "a private address",
    "ff02::1": "a multicast address",
    "::ffff:127.0.0.9": "a loopback address",  # IPv4-mapped
    "::ffff:169.254.169.254": "a link-local address",
    "::127.0.0.9": "a loopback address",  # IPv4-compatible
    "64:ff9b::a9fe:a9fe": "a link-local address",  # NAT64 of 169.254.169.254
    "2002:7f00:9::": "a loopback address",  # 6to4 of 127.0.0.9
    "192.0.2.1": "a private address",  # TEST-NET-1: documentation only
}


@pytest.mark.parametrize(("address", "kind"), REFUSED.items())
def test_addresses_that_are_no_host_on_the_web_are_refused(address, kind):
    assert address_refusal(address) == kind


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(address):
    assert address_refusal(address) is None


def test_an_allowed_network_lets_its_addresses_through_and_no_other():
    allowed = parse_networks("127.0.0.1/32, 10.0.0.0/8")
    assert address_refusal("127.0.0.1", allowed) is None
    assert address_refusal("::ffff:127.0.0.1", allowed) is None
    assert address_refusal("10.9.9.9", allowed) is None
    assert address_refusal("127.0.0.9", allowed) == "a loopback address"
    assert address_refusal("[::ffff:127.0.0.9]".strip("[]"), allowed) == "a loopback address"


def test_a_bad_network_is_a_setting_error():
    with pytest.raises(SettingError, match="ALLOWED_PRIVATE_NETWORKS='127.0.0.1/33'"):
        parse_networks("127.0.0.1/33")


def test_links_to_internal_addresses_are_dropped_by_their_own_rule():
    hrefs = [
        "http://127.0.0.9/",
        "http://[::ffff:127.0.0.9]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://0x7f000009/",  # 127.0.0.9 as a browser reads it
        "http://127.0.0.1/",
        "http://93.184.215.14/",
    ]
    found = [(href, "a href") for href in hrefs]
    allowed = parse_networks("127.0.0.1/32")
    links = filter_found(found, "hub.test", DenyList(), allowed=allowed)
    assert links.hostnames == {"127.0.0.1", "93.184.215.14"}
    assert links.dropped == {PRIVATE_ADDRESS: 4}


def test_seeds_and_links_share_the_rule(monkeypatch):
    from crawler.core import hostnames

    monkeypatch.setattr(hostnames, "_environ", {"ALLOWED_PRIVATE_NETWORKS": "10.0.0.0/8"})
    assert seed_refusal("10.1.1.1") is None
    assert seed_refusal("100.64.0.1").startswith("a shared (carrier-grade NAT) address")
    assert seed_refusal("127.0.0.9", allow_private=True) is None


def test_the_resolver_refuses_an_internal_literal_under_the_crawls_name_for_it():
    """Every connection asks getHostByName, IP literals included (a redirect to one)."""
    from twisted.internet import reactor

    from crawler.network.resolver import OutcomeResolver, last_failure

    allowed = parse_networks("127.0.0.1/32")
    resolver = OutcomeResolver(reactor, [("127.0.0.1", 53)], allowed=allowed)
    refused, answered = [], []
    resolver.getHostByName("::ffff:127.0.0.9").addErrback(refused.append)
    resolver.getHostByName("127.0.0.1").addCallback(answered.append)
    assert refused[0].value.resolution.outcome == "ADDRESS_REFUSED"
    assert last_failure("::ffff:7f00:9") == "ADDRESS_REFUSED"
    assert answered == ["127.0.0.1"]
