"""Links per second through crawler.core.links.filter_links, against the naive urllib way.

Target: >= 200,000 links/s on one core, with a DenyList of ~10k entries, over links to
at least 200,000 distinct hosts (as many as a real crawl meets), so the link filter's host
cache (urls._link_host, an LRU of 65,536 names) cannot carry the figure. A run with
fewer distinct hosts (`--pages N` below the default) prints its figures and no verdict.
What the cache adds is measured too: the same rounds with the cache taken out.

Baseline (same links, same process, rounds interleaved): for each href,
urllib.parse.urljoin(page_url, href) then urlsplit(url).hostname, which
resolves the link but neither normalizes the name (case, IDNA, trailing dot,
checks) nor matches it against the deny list.

The corpus is generated (seeded): pages of 40-200 links each, a mix of relative
links, absolute links to the page's own host and to many others (upper case,
ports, userinfo, a trailing dot, IDN now and then), protocol-relative //cdn
links, mailto:/javascript:/tel:/data: links, fragments, queries and stray
whitespace, with ~4% of links pointing at or under a deny entry. Links to other sites
go to popular names 40% of the time, otherwise to a long tail where each name is new.
About 1% are forms only a WHATWG parser reads right (backslashes, `///host`,
`https:host` on an http page, leading C0 controls, tabs inside) and 1% IDN, symbol
and emoji names.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import random
import sys
from urllib.parse import urljoin, urlsplit

from _common import (
    Runs,
    deny_entries,
    fresh,
    machine_line,
    registered_domain,
    subdomain_of,
    timed,
    verdict,
    word,
    words,
)

from crawler.core import urls
from crawler.core.denylist import BLOCKED, NO_FOLLOW, DenyList
from crawler.core.links import filter_links

PAGES = 14_000  # about 1.7M links to about 215,000 distinct hosts
DENY_ENTRIES = 10_000
ROUNDS = 5
TARGET = 200_000  # links/s
MIN_DISTINCT_HOSTS = 200_000  # below it the cache could carry the figure: no verdict

POPULAR = words(
    "www.facebook.com twitter.com x.com www.instagram.com www.linkedin.com"
    " www.youtube.com www.google.com maps.google.com play.google.com apps.apple.com"
    " github.com en.wikipedia.org www.amazon.com t.me wa.me www.pinterest.com"
    " www.tiktok.com medium.com"
)
CDNS = words(
    "cdn.jsdelivr.net fonts.googleapis.com fonts.gstatic.com ajax.googleapis.com"
    " cdnjs.cloudflare.com unpkg.com code.jquery.com stackpath.bootstrapcdn.com"
    " www.googletagmanager.com connect.facebook.net static.cloudflareinsights.com"
)
IDN = ["bücher.de", "münchen.de", "www.straße.de", "пример.рф", "例え.jp", "café.fr"]
# Names browsers reach that IDNA2008 refuses (symbols, emoji) and a final sigma.
SYMBOLS = ["☃.net", "💩.la", "i❤.ws", "✈.example.com", "ΟΔΟΣ-1.com", "faß.de"]
# Ad and tracker names that a real deny list would hold and pages do link to.
TRACKERS = words(
    "doubleclick.net googlesyndication.com adservice.google.com ads.yahoo.com"
    " track.adform.net pixel.quantserve.com bat.bing.com sc-static.net"
)


def path(rng: random.Random) -> str:
    parts = [word(rng) for _ in range(rng.randint(0, 3))]
    p = "/" + "/".join(parts)
    if rng.random() < 0.3:
        p += rng.choice((".html", ".php", "/", ".pdf", ".jpg"))
    if rng.random() < 0.25:
        p += f"?{word(rng)}={rng.randint(0, 999)}&utm_source={word(rng)}"
    if rng.random() < 0.15:
        p += f"#{word(rng)}"
    return p


def shout(rng: random.Random, text: str) -> str:
    """Upper-case a host now and then, as some sites write them."""
    r = rng.random()
    if r < 0.03:
        return text.upper()
    if r < 0.06:
        return text.title()
    return text


def absolute(rng: random.Random, host: str) -> str:
    scheme = "https" if rng.random() < 0.8 else "http"
    if rng.random() < 0.04:
        scheme = scheme.upper()
    host = shout(rng, host)
    r = rng.random()
    if r < 0.02:
        host += f":{rng.choice((8080, 8443, 443, 80, 3000))}"
    elif r < 0.025:
        host = f"user:pw@{host}"
    elif r < 0.03:
        host += "."
    return f"{scheme}://{host}{path(rng)}"


def browser_form(rng: random.Random, host: str) -> str:
    """A link to `host` written the way browsers forgive: slashes, controls, tabs."""
    return rng.choice(
        (
            f"\\\\{host}\\{word(rng)}",
            f"http:\\\\{host}\\",
            f"///{host}{path(rng)}",
            f"https:{host}/",
            f"\x01 https://{host}/",
            f"/\t/{host}/",
            f"http://{host}\n{path(rng)}",
        )
    )


def long_tail(rng: random.Random) -> str:
    """A site no other link of the corpus names (most of the web, seen from one page)."""
    return subdomain_of(registered_domain(rng), rng, rng.randint(0, 2))


def page_links(rng: random.Random, page_host: str, denied: list[str]):
    links = []
    for _ in range(rng.randint(40, 200)):
        r = rng.random()
        if r < 0.40:  # relative
            kind = rng.random()
            if kind < 0.6:
                link = path(rng)
            elif kind < 0.8:
                link = f"{word(rng)}.html"
            elif kind < 0.9:
                link = f"../{word(rng)}/"
            else:
                link = rng.choice(("#", "#top", "?page=2", "./", "#main-content"))
        elif r < 0.62:  # absolute, same site
            link = absolute(rng, page_host)
        elif r < 0.80:  # absolute, other sites
            host = rng.choice(POPULAR) if rng.random() < 0.4 else long_tail(rng)
            link = absolute(rng, host)
        elif r < 0.84:  # at or under a deny entry
            entry = rng.choice(denied)
            link = absolute(rng, subdomain_of(entry, rng, rng.randint(0, 2)))
        elif r < 0.89:  # protocol-relative
            link = f"//{rng.choice(CDNS)}{path(rng)}"
        elif r < 0.97:  # no hostname
            link = rng.choice(
                (
                    f"mailto:{word(rng)}@{page_host}",
                    "javascript:void(0)",
                    "javascript:;",
                    f"tel:+49{rng.randint(10**8, 10**9)}",
                    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNk",
                    f"whatsapp://send?text={word(rng)}",
                )
            )
        elif r < 0.98:  # IDN, symbol and emoji names
            link = absolute(rng, rng.choice(IDN if rng.random() < 0.5 else SYMBOLS))
        elif r < 0.99:  # forms only a WHATWG parser reads right
            link = browser_form(rng, long_tail(rng))
        else:  # junk a page may carry
            link = rng.choice(
                (
                    "http://",
                    "https://exa mple.com/",
                    "http://[::1]:8080/",
                    "http://192.168.0.1/admin",
                    "https://-bad-.example.com/",
                    "",
                    "HTTP://WWW.EXAMPLE.COM",
                )
            )
        if rng.random() < 0.02:
            link = f" {link}\n"
        links.append(link)
    return links


def corpus(rng: random.Random, denied: list[str], n: int) -> list[tuple[str, list[str]]]:
    pages = []
    for _ in range(n):
        page_host = subdomain_of(registered_domain(rng), rng, rng.choice((0, 1, 1, 2)))
        pages.append((page_host, page_links(rng, page_host, denied)))
    return pages


def without_host_cache(run):
    """Call `run` with the link filter's host cache taken out (the function it wraps)."""
    cached = urls._link_host
    urls._link_host = cached.__wrapped__
    try:
        return run()
    finally:
        urls._link_host = cached


def ours(pages, denylist: DenyList) -> None:
    for page_host, hrefs in pages:
        filter_links(hrefs, page_host, denylist)


def naive(pages) -> None:
    for page_host, hrefs in pages:
        base = f"https://{page_host}/"
        for href in hrefs:
            try:  # noqa: SIM105 (contextlib.suppress would slow the baseline's loop)
                urlsplit(urljoin(base, href)).hostname  # noqa: B018
            except ValueError:
                pass


def pages_wanted() -> int:
    """--pages N (a quick check prints no verdict: too few distinct hosts)."""
    if "--pages" in sys.argv:
        return int(sys.argv[sys.argv.index("--pages") + 1])
    return PAGES


def main() -> None:
    rng = random.Random(20261130)
    print(machine_line())
    entries = deny_entries(DENY_ENTRIES - len(TRACKERS), rng) + TRACKERS
    denylist = DenyList((e, rng.choice((BLOCKED, NO_FOLLOW))) for e in entries)
    n_pages = pages_wanted()
    pages = corpus(rng, entries, n_pages)
    links = sum(len(hrefs) for _, hrefs in pages)
    distinct = describe(pages, links, denylist)

    def copy():
        return [(host, fresh(hrefs)) for host, hrefs in pages]

    mine, theirs, uncached = Runs(), Runs(), Runs()
    for round_no in range(ROUNDS + 1):  # round 0 warms up
        for runs, run in (
            (mine, lambda b: ours(b, denylist)),
            (theirs, naive),
            (uncached, lambda b: without_host_cache(lambda: ours(b, denylist))),
        ):
            batch = copy()
            seconds = timed(lambda b=batch, r=run: r(b))
            if round_no:
                runs.add(seconds)

    urls._link_host.cache_clear()
    ours(copy(), denylist)
    cache = urls._link_host.cache_info()
    ours_rate, naive_rate = links / mine.best, links / theirs.best
    uncached_rate = links / uncached.best
    print(f"# best of {ROUNDS} interleaved rounds [median], one process, gc off while timed")
    print(
        f"naive urljoin+urlsplit().hostname: {naive_rate:,.0f} links/s"
        f" [median {links / theirs.median:,.0f}] (baseline: no normalization, no deny match)"
    )
    judged = distinct >= MIN_DISTINCT_HOSTS
    word = verdict(
        ours_rate >= TARGET if judged else None,
        # named by the corpus' settings, not its measured host count, which moves
        f"filter_links, {PAGES:,} pages, {DENY_ENTRIES // 1000}k deny entries",
        f"{ours_rate:,.0f} links/s",
        f">= {TARGET:,}/s",
    )
    print(
        f"filter_links (10k deny entries): {ours_rate:,.0f} links/s"
        f" [median {links / mine.median:,.0f}]"
        f" (ratio vs naive urljoin: {ours_rate / naive_rate:.2f}, target >= {TARGET:,} links/s)"
        f" {word}"
    )
    if not judged:
        print(f"# {distinct:,} distinct hosts < {MIN_DISTINCT_HOSTS:,}: no verdict (--pages)")
    hit_rate = cache.hits / max(cache.hits + cache.misses, 1)
    print(
        f"what the host cache adds: {ours_rate / uncached_rate - 1:+.0%} links/s"
        f" ({uncached_rate:,.0f} links/s without it [median {links / uncached.median:,.0f}];"
        f" {hit_rate:.0%} of one pass's look-ups hit its {cache.maxsize:,} names)"
    )
    if ours_rate < TARGET or "--profile" in sys.argv:
        profile(copy(), denylist)


def describe(pages, links: int, denylist: DenyList) -> int:
    """Print the corpus line; the number of distinct hosts its links and pages name."""
    totals = {"found": 0, "saved": 0}
    dropped: dict[str, int] = {}
    hosts = {page_host for page_host, _ in pages}
    for page_host, hrefs in pages:
        result = filter_links(hrefs, page_host, denylist)
        totals["found"] += result.found
        totals["saved"] += len(result.hostnames)
        hosts |= result.hostnames
        for rule, n in result.dropped.items():
            dropped[rule] = dropped.get(rule, 0) + n
    print(
        f"# corpus: {len(pages):,} pages, {links:,} links to {len(hosts):,} distinct hosts"
        f" (those kept, and the pages'), deny list {len(denylist):,} entries;"
        f" per page: {totals['saved'] / len(pages):.1f} distinct hostnames kept;"
        f" dropped {', '.join(f'{k} {v:,}' for k, v in sorted(dropped.items()))}"
    )
    return len(hosts)


def profile(pages, denylist: DenyList) -> None:
    """Where filter_links spends its time (cProfile inflates call-heavy code; read shares)."""
    profiler = cProfile.Profile()
    profiler.runcall(ours, pages, denylist)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
    print("# profile of one pass, by own time:")
    for line in out.getvalue().splitlines():
        if line.strip():
            print("#   " + line.strip())


if __name__ == "__main__":
    main()
