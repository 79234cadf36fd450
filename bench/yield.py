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

A second yardstick shares nothing with the crawler: a real browser.
bench/corpus/browser-truth.json (made by bench/_record_browser_truth.py with Chromium, read by
bench/_browser_truth.py, which imports nothing from crawler/) holds per page the hosts
in the DOM's links after the scripts ran, the hosts Chromium tried with JavaScript off
and on (resources: named by the markup) and only with it on (scripts). A browser host
counts as found when the crawler's extraction saves it from any source group. Targets:
>= 95% in total, >= 90% per group. Junk saved: names the crawler saved that cannot
exist (single label, unknown TLD, special use; bench's own check): target 0. The old
reference's figures are printed beside the browser's.

`--pages N` reads only the first N pages (a quick check).
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path
from urllib.parse import urlsplit

from _browser_truth import SCORED, cannot_exist, load_truth, site_of, spelled
from _common import Runs, machine_line, timed, verdict
from _reference_urls import reference_hosts
from scrapy.http import HtmlResponse

from crawler.core.denylist import DenyList
from crawler.core.hostnames import normalize_or_none
from crawler.core.links import filter_found, filter_links
from crawler.core.pagelinks import document_urls, parse_document

CORPUS = Path(__file__).parent / "corpus"
GROUPS = ("links", "resources", "metadata")
CRAWLER_GROUPS = (*GROUPS, "scripts")  # the page's own groups: every source the document has
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
        for group in CRAWLER_GROUPS
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


def share_line(name: str, counts: list[int], target: float, figure: str) -> tuple[str, bool]:
    """`name: reference -> found (share) VERDICT` and whether it met `target`."""
    total, found = counts
    share = found / total if total else 1.0
    word = verdict(share >= target, figure, f"{share:.1%}", f">= {target:.0%}")
    return f"{name}: {total} -> {found} ({share:.1%}) {word}", share >= target


def yields(pages) -> dict[str, list[int]]:
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
    return totals


def browser_yields(pages, old: dict[str, list[int]]) -> None:
    """The crawler's extraction against what Chromium contacted or linked (see _browser_truth)."""
    version, truth = load_truth()
    totals = {g: [0, 0] for g in (*SCORED, "all")}  # group: [browser's hosts, found by ours]
    same_group = {g: 0 for g in SCORED}
    first_party = [0, 0]  # missed hosts under the page's own site, under another
    unscored: dict[str, set[str]] = {}
    junk: dict[str, set[str]] = {}
    absent = 0
    print(
        f"# browser truth: bench/corpus/browser-truth.json (Chromium {version}); pages with a miss:"
    )
    for url, body in pages:
        if url not in truth:
            absent += 1
            continue
        own = spelled(urlsplit(url).hostname or "")
        ours = {g: {spelled(n) for n in names} for g, names in ours_by_group(url, body).items()}
        saved = set().union(*ours.values())
        for name in saved:
            if cannot_exist(name):
                junk.setdefault(cannot_exist(name), set()).add(name)
        browser: dict[str, set[str]] = {}
        for group in SCORED:
            browser[group] = set()
            for name in truth[url][group] - {own}:
                if cannot_exist(name):
                    unscored.setdefault(cannot_exist(name), set()).add(name)
                else:
                    browser[group].add(name)
            totals[group][0] += len(browser[group])
            totals[group][1] += len(browser[group] & saved)
            same_group[group] += len(browser[group] & ours.get(group, set()))
        every = set().union(*browser.values())
        missed = every - saved
        totals["all"][0] += len(every)
        totals["all"][1] += len(every) - len(missed)
        for name in missed:
            first_party[site_of(name) != site_of(own)] += 1
        if missed:
            by_group = "; ".join(
                f"{g} {', '.join(sorted(browser[g] - saved)[:4])}"
                for g in SCORED
                if browser[g] - saved
            )
            print(f"{own}: {len(every)} -> {len(every) - len(missed)}  missed {by_group}")
    if absent:
        print(f"# {absent} pages have no browser truth (not scored)")
    for reason, names in sorted(unscored.items()):
        print(f"not scored, the browser's names that cannot exist ({reason}): {sorted(names)}")
    print("# browser truth, by group: browser's hosts -> found by ours in any group (share)")
    ok = True
    for group in SCORED:
        line, met = share_line(group, totals[group], GROUP_TARGET, f"browser: {group} found")
        ok &= met
        in_group = same_group[group] / totals[group][0] if totals[group][0] else 1.0
        print(f"{line}  [in ours' own group {group}: {in_group:.1%}]")
    line, met = share_line("all", totals["all"], TOTAL_TARGET, "browser: all found")
    print(f"{line} (target >= 95%, each group >= 90%)")
    print(f"missed: {first_party[0]} under the page's own site, {first_party[1]} under another")
    saved_junk = sum(len(n) for n in junk.values())
    word = verdict(saved_junk == 0, "junk saved (cannot exist)", f"{saved_junk}", "0")
    examples = "; ".join(f"{r}: {', '.join(sorted(n)[:5])}" for r, n in sorted(junk.items()))
    print(f"junk saved by ours (single label, unknown TLD, special use): {saved_junk} {word}")
    if examples:
        print(f"  e.g. {examples}")
    print("# both yardsticks, share of each's hosts found by ours (hosts per page summed)")
    print(f"{'group':<10} {'browser truth':>20} {'old reference':>20}")
    for group in (*SCORED, "metadata", "all"):
        cells = [
            f"{t[1] / t[0]:.1%} of {t[0]}" if t and t[0] else "-"
            for t in (totals.get(group), old.get(group))
        ]
        print(f"{group:<10} {cells[0]:>20} {cells[1]:>20}")


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
    old = yields(pages)
    browser_yields(pages, old)
    rates(pages)


if __name__ == "__main__":
    main()
