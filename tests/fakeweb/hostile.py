"""Hostile hosts of issue 45's table, for the e2e tests and bench/hostile_crawl.py.

Each builder makes one host of a World whose one fetch names far more hosts than
the caps let it save (MAX_NAMES_PER_PAGE), or sends more than the bounds let it
read (DOWNLOAD_MAXSIZE, MAX_HEADER_BYTES). Every name a case names starts with
its `tag`, so what one host's fetch saved can be counted apart.

    world = World()
    HOSTILE["2 MiB page of registered domains"].build(world, "flood.test", "fl")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .world import ROBOTS_ALLOW_ALL, World

# Under the production DOWNLOAD_MAXSIZE (2 MiB): a body read whole.
BODY_BYTES = 2_000_000


def flood_lines(flood: list) -> str:
    """`count` header lines `name: template`, {i} numbered 0, 1, ...: a header flood,
    built in the fakeweb process (a world file of a million lines would be 30 MB)."""
    name, template, count = flood
    return "".join(f"{name}: {template.format(i=i)}\r\n" for i in range(count))


def names_body(tag: str, size: int = BODY_BYTES) -> str:
    """An HTML body of `size` bytes of links to distinct registered domains tag0.test..."""
    links, length, i = [], 0, 0
    while length < size - 40:
        link = f"<a href=//{tag}{i}.test>"
        links.append(link)
        length += len(link)
        i += 1
    return "".join(links)


def name_flood(world: World, host: str, tag: str) -> None:
    """A page of about 90,000 links to distinct registered domains (2 MB)."""
    world.raw(host, names_body(tag).encode())


def link_lines(count: int) -> Callable[[World, str, str], None]:
    """`count` Link header lines, each naming a new registered domain."""

    def build(world: World, host: str, tag: str) -> None:
        world.raw(host, b"<html></html>")
        world.pages[host]["/"]["header_flood"] = ["Link", f"<https://{tag}{{i}}.test/>", count]

    return build


def redirect_hops(world: World, host: str, tag: str, hops: int = 5) -> None:
    """/ redirects to /1, ... /`hops`, each hop's body 2 MB of names of its own."""
    for hop in range(hops):
        path = "/" if hop == 0 else f"/{hop}"
        world.redirect(host, f"/{hop + 1}", path=path, status=302, body=names_body(f"{tag}h{hop}-"))
    world.page(host, f"/{hops}", title="the end of the hops")


def certificate_names(count: int) -> Callable[[World, str, str], None]:
    """https://host/ presents a certificate of `count` subjectAltName names. OpenSSL's
    client reads a certificate chain of at most 100 KB (max_cert_list): 10,000 names of
    .test are past it (a failed handshake, then the plain-HTTP fallback), 6,500 are not."""

    def build(world: World, host: str, tag: str) -> None:
        world.site(host)
        world.certify_host(host, [f"{tag}{i}.test" for i in range(count)])

    return build


def csp_hosts(world: World, host: str, tag: str, count: int = 100_000) -> None:
    """A Content-Security-Policy of `count` hosts (one header line of 1.2 MB)."""
    policy = "default-src " + " ".join(f"{tag}{i}.test" for i in range(count))
    world.raw(host, b"<html></html>", headers={"Content-Security-Policy": policy})


def robots_sitemaps(world: World, host: str, tag: str) -> None:
    """A robots.txt of 2 MB of `Sitemap:` lines, each on a new registered domain."""
    world.site(host)
    lines, length, i = [ROBOTS_ALLOW_ALL], 0, 0
    while length < BODY_BYTES - 100:
        line = f"Sitemap: https://{tag}{i}.test/s.xml\n"
        lines.append(line)
        length += len(line)
        i += 1
    world.robots[host] = "".join(lines)


def head_near_its_bound(world: World, host: str, tag: str) -> None:
    """200 KB of Link header lines: under MAX_HEADER_BYTES (256 KiB), so read whole."""
    link_lines(9_000)(world, host, tag)


@dataclass(frozen=True)
class Case:
    build: Callable[[World, str, str], None]
    scheme: str = "http"  # https: the certificate is what floods


# The table (its DNS case, one answer of 8 CNAME hops of 300 CNAMEs each, needs
# a DNS server that answers over TCP past 512 bytes: not here), and a head just under
# its bound.
HOSTILE: dict[str, Case] = {
    "2 MiB page of registered domains": Case(name_flood),
    "1,000,000 Link header lines": Case(link_lines(1_000_000)),
    "3,000,000 Link header lines": Case(link_lines(3_000_000)),
    "200 KB of Link header lines": Case(head_near_its_bound),
    "5 redirect hops, 2 MiB of names each": Case(redirect_hops),
    "certificate of 10,000 names": Case(certificate_names(10_000), "https"),
    "certificate of 6,500 names": Case(certificate_names(6_500), "https"),
    "CSP header of 100,000 hosts": Case(csp_hosts),
    "robots.txt of 2 MiB of Sitemap lines": Case(robots_sitemaps),
}
