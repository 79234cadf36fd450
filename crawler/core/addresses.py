"""The public-address rule: which IP addresses the crawl may connect to, or save. Pure.

A page, a redirect or a DNS answer can name any address; only public unicast ones are
the web. The rest (loopback, private, link-local, shared CGNAT, multicast, reserved,
unspecified, and IPv6 forms that carry one of those) are this machine or its network:
fetching them is server-side request forgery (a cloud's metadata service is 169.254.169.254).
ALLOWED_PRIVATE_NETWORKS lets a test network's addresses through.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from crawler.core.setting_declaration import SettingError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# RFC 6598: not private by `ipaddress`'s lists, and no host on the web either.
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
# RFC 6052's well-known NAT64 prefix: the low 32 bits are the IPv4 address reached.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# IPv4-compatible IPv6 (::a.b.c.d, deprecated by RFC 4291): :: and ::1 are not such.
_COMPATIBLE = ipaddress.IPv6Network("::/96")

# The kinds of address that are no host on the public web, most telling first.
_KINDS = (
    ("is_unspecified", "an unspecified address"),
    ("is_loopback", "a loopback address"),
    ("is_link_local", "a link-local address"),
    ("is_multicast", "a multicast address"),
    ("is_reserved", "a reserved address"),
    ("is_private", "a private address"),
)


def parse_networks(value: str) -> tuple[Network, ...]:
    """ALLOWED_PRIVATE_NETWORKS (`127.0.0.1/32, 10.1.0.0/16`) as networks; SettingError."""
    return _parse_networks(value)


@lru_cache(maxsize=16)
def _parse_networks(value: str) -> tuple[Network, ...]:
    networks = []
    for part in (p.strip() for p in value.split(",")):
        if part:
            try:
                networks.append(ipaddress.ip_network(part))
            except ValueError as exc:
                raise SettingError(f"ALLOWED_PRIVATE_NETWORKS={value!r}: {exc}") from None
    return tuple(networks)


def address_refusal(address: str | Address, allowed: tuple[Network, ...] = ()) -> str | None:
    """Why the crawl must not connect to `address`, in words; None for a public one or
    one in an `allowed` network. An IPv6 address that carries an IPv4 one (mapped,
    compatible, NAT64, 6to4) is judged as that IPv4 address."""
    if isinstance(address, str):
        address = ipaddress.ip_address(address)
    reached = carried_ipv4(address) or address
    if any(reached in network for network in allowed):
        return None
    return _kind(reached)


# The one setting that lets private addresses through, for seeding and crawling alike.
ALLOWED_SETTING = "ALLOWED_PRIVATE_NETWORKS"


def refused_words(address: str | Address, kind: str) -> str:
    """Why an address was refused, naming it and the setting that would let it through:
    '10.20.0.5 is a private address, not in ALLOWED_PRIVATE_NETWORKS'."""
    return f"{address} is {kind}, not in {ALLOWED_SETTING}"


def carried_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one reaches (::ffff:a.b.c.d, ::a.b.c.d, NAT64, 6to4)."""
    if address.version == 4:
        return None
    if address.ipv4_mapped or address.sixtofour:
        return address.ipv4_mapped or address.sixtofour
    if (address in _COMPATIBLE and int(address) > 1) or address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _kind(address: Address) -> str | None:
    for attribute, kind in _KINDS:
        if getattr(address, attribute):
            return kind
    if address in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if not address.is_global:
        return "an address that is not globally reachable"
    return None
