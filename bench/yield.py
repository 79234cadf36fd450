"""Hostnames a real page reveals: the crawler's extraction against a reference, and its cost.

Corpus: bench/corpus/ (real article and front pages of 110 sites, saved whole by an
article-extraction benchmark; see bench/corpus/PROVENANCE). For each page:

- the reference (bench/_reference_urls.py: the HTML standard's URL attributes on
  html.parser and urljoin, apart from the crawler's code) lists the distinct
  hostnames the page names, by source group (links, resources, metadata);
- the crawler's extraction (crawler.core.pagelinks + crawler.core.links.filter_found,
  every source on) runs on the same page; its share of the reference's names is
  printed per page, per group and in total. Targets: >= 95% in total, >= 90% per group.

Parse rate: pages/s of response -> parse -> extract -> filter, with every source on
(the spider's way: crawler.core.pagelinks.parse_document, then document_urls), against
the `<a>`/`<area>`-only extraction the spider did before (baseline: Scrapy's selector,
response.xpath), both from Scrapy's HtmlResponse, interleaved rounds in one process.
Target: ratio >= 0.7.

`--pages N` reads only the first N pages (a quick check).
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path
from urllib.parse import urlsplit

from _common import Runs, machine_line, timed, verdict
from _reference_urls import reference_hosts
from scrapy.http import HtmlResponse

from crawler.core.denylist import DenyList
from crawler.core.hostnames import normalize_or_none
from crawler.core.links import filter_found, filter_links
from crawler.core.pagelinks import document_urls, parse_document

CORPUS = Path(__file__).parent / "corpus"
GROUPS = ("links", "resources", "metadata")
ROUNDS = 7
TOTAL_TARGET, GROUP_TARGET, RATE_TARGET = 0.95, 0.90, 0.7


def load(limit: int | None) -> list[tuple[str, bytes]]:
    """(url, body) of the corpus pages, in the index's order."""
    pages = []
    for line in (CORPUS / "pages.tsv").read_text().splitlines()[:limit]:
        name, url = line.split("\t")
        pages.append((url, gzip.decompress((CORPUS / name).read_bytes())))
    return pages


def response(url: str, body: bytes) -> HtmlResponse:
    return HtmlResponse(url, body=body, headers={"Content-Type": "text/html"})


def ours_by_group(url: str, body: bytes) -> dict[str, set[str]]:
    """{group: hostnames} the crawler's extraction finds, the page's own host left out."""
    parts = urlsplit(url)
    own = normalize_or_none(parts.hostname or "")
    found = document_urls(parse_document(response(url, body).text))
    return {
        group: filter_found(
            found.urls, own, DenyList(), parts.scheme, found.base, frozenset({group})
        ).hostnames
        - {own}
        for group in GROUPS
    }


def anchor_hosts(url: str, body: bytes) -> set[str]:
    """The hostnames the `<a>`/`<area>`-only extraction finds, the page's own left out."""
    parts = urlsplit(url)
    own = normalize_or_none(parts.hostname or "")
    hrefs = response(url, body).xpath("//a/@href | //area/@href").getall()
    return filter_links(hrefs, own, DenyList(), parts.scheme).hostnames - {own}


def anchors_only(pages, denylist: DenyList) -> None:
    """The baseline: what the spider read before, `<a>`/`<area>` hrefs only."""
    for url, body in pages:
        parts = urlsplit(url)
        hrefs = response(url, body).xpath("//a/@href | //area/@href").getall()
        filter_links(hrefs, parts.hostname, denylist, parts.scheme)


def every_source(pages, denylist: DenyList) -> None:
    for url, body in pages:
        parts = urlsplit(url)
        found = document_urls(parse_document(response(url, body).text))
        filter_found(found.urls, parts.hostname, denylist, parts.scheme, found.base)


def yields(pages) -> None:
    totals = {g: [0, 0] for g in (*GROUPS, "all", "a-only")}  # group: [reference, found]
    print("# page: reference hostnames (links/resources/metadata) -> found by ours, share")
    for url, body in pages:
        text = response(url, body).text
        reference = reference_hosts(text, url)
        ours = ours_by_group(url, body)
        every_ref = set().union(*reference.values())
        every_ours = set().union(*ours.values())
        for group in GROUPS:
            totals[group][0] += len(reference[group])
            totals[group][1] += len(reference[group] & ours[group])
        totals["all"][0] += len(every_ref)
        totals["all"][1] += len(every_ref & every_ours)
        totals["a-only"][1] += len(every_ref & anchor_hosts(url, body))
        counts = "/".join(str(len(reference[g])) for g in GROUPS)
        found = len(every_ref & every_ours)
        share = found / len(every_ref) if every_ref else 1.0
        missed = sorted(every_ref - every_ours)[:3]
        print(
            f"{urlsplit(url).hostname}: {len(every_ref)} ({counts}) -> {found} {share:.0%}"
            + (f"  missed e.g. {', '.join(missed)}" if missed else "")
        )
    print("# total, by group: reference -> found (share), target per group >= 90%")
    ok = True
    for group in GROUPS:
        ref, found = totals[group]
        share = found / ref if ref else 1.0
        ok &= share >= GROUP_TARGET
        word = verdict(
            share >= GROUP_TARGET, f"{group} found", f"{share:.1%}", f">= {GROUP_TARGET:.0%}"
        )
        print(f"{group}: {ref} -> {found} ({share:.1%}) {word}")
    ref, found = totals["all"]
    share = found / ref if ref else 1.0
    word = verdict(
        share >= TOTAL_TARGET and ok, "all sources found", f"{share:.1%}", f">= {TOTAL_TARGET:.0%}"
    )
    print(
        f"all sources: {ref} distinct hostnames per page summed -> {found} found"
        f" ({share:.1%}, target >= 95%) {word}"
    )
    anchors = totals["a-only"][1]
    print(f"<a>/<area> only (the spider before): {anchors} found ({anchors / ref:.1%})")


def rates(pages) -> None:
    """Each page timed alone, ours and the baseline back to back, ROUNDS times; a page's
    best time per method sums to the corpus time (a burst of load on this shared machine
    then spoils one page's round, not a whole corpus pass)."""
    denylist = DenyList()
    mine = [float("inf")] * len(pages)
    base = [float("inf")] * len(pages)
    rounds = [Runs(), Runs()]
    for round_no in range(ROUNDS + 1):  # round 0 warms up
        totals = [0.0, 0.0]
        for i, page in enumerate(pages):
            ours = timed(lambda p=page: every_source([p], denylist))
            anchors = timed(lambda p=page: anchors_only([p], denylist))
            totals[0] += ours
            totals[1] += anchors
            if round_no:
                mine[i], base[i] = min(mine[i], ours), min(base[i], anchors)
        if round_no:
            rounds[0].add(totals[0])
            rounds[1].add(totals[1])
    ours_rate, base_rate = len(pages) / sum(mine), len(pages) / sum(base)
    ours_median, base_median = (len(pages) / r.median for r in rounds)
    print(f"# parse rate: each page's best of {ROUNDS} interleaved rounds [median round]")
    print(f"<a>/<area> only (baseline): {base_rate:,.0f} pages/s [median {base_median:,.0f}]")
    ratio = ours_rate / base_rate
    word = verdict(
        ratio >= RATE_TARGET, "parse rate vs <a>-only", f"x{ratio:.2f}", f">= x{RATE_TARGET}"
    )
    print(
        f"every source: {ours_rate:,.0f} pages/s [median {ours_median:,.0f}]"
        f" (ratio vs <a>-only: {ratio:.2f}, target >= {RATE_TARGET})"
        f" {word}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=None, help="only the first N pages")
    args = parser.parse_args()
    pages = load(args.pages)
    sites = len({urlsplit(url).hostname for url, _ in pages})
    print(machine_line())
    print(f"# corpus: {len(pages)} pages of {sites} sites, bench/corpus (see PROVENANCE)")
    yields(pages)
    rates(pages)


if __name__ == "__main__":
    main()
