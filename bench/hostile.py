"""Every extractor that runs a pattern on page or header text, fed hostile input: linear?

A page or a header is the attacker's text. A pattern that backtracks turns a small
page into minutes of one worker's CPU (issue 45: a `<style>` of 128 KB of `url(` took
46 s, the same at 1.9 MB never finished). Here each extractor gets the input that made
one of them quadratic, and a few shapes more, at 200 KB and at 2 MB (10x the input):

- CSS `url()`/`@import` (a `<style>`, through the whole document walk): `url(` repeated,
  one `url(` and then spaces, `@import '` repeated, `url(a` repeated;
- `Link` headers: `<` repeated; CSP: a policy of one source per word; `Refresh`: digits,
  then spaces, then an unclosed quote;
- `srcset`: candidates with an unclosed `(`; scripts: `"//` repeated and one long
  unclosed authority; JSON-LD that does not parse: `//a` repeated;
- robots.txt `Sitemap:` lines.

Target: each 2 MB time <= 15x its 200 KB time (linear, with room for caches). A case
is killed once one run takes past LIMIT seconds (a quadratic one at 2 MB would run for
hours): FAIL. Each case runs in a child process of its own, the two sizes alternating;
each figure is the best of ROUNDS runs, in CPU seconds of the child.

    python bench/hostile.py [--quick]   # --quick: 20 KB and 200 KB instead
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable

from _common import machine_line, timed, verdict

from crawler.core.pagelinks import document_urls, parse_document, script_urls, srcset_urls
from crawler.core.sources import csp_hosts, header_urls, refresh_url, robots_sitemaps

SMALL, LARGE = 200_000, 2_000_000
TARGET = 15.0  # the 2 MB time over the 200 KB time
LIMIT = 30.0  # seconds one run may take before its case is killed
ROUNDS = 5


def repeated(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * (size // len(unit)) + tail


def page(css: str) -> Callable[[], object]:
    html = f"<html><head><style>{css}</style></head><body></body></html>"
    return lambda: document_urls(parse_document(html))


def json_ld(text: str) -> Callable[[], object]:
    html = f'<script type="application/ld+json">{text}</script>'
    return lambda: document_urls(parse_document(html))


def drained(iterable_of: Callable[[str], object], text: str) -> Callable[[], object]:
    return lambda: list(iterable_of(text))


# name → a function of the size that returns the call to time.
CASES: dict[str, Callable[[int], Callable[[], object]]] = {
    "css url( repeated": lambda n: page(repeated("url(", n)),
    "css url( then spaces": lambda n: page(repeated(" ", n, head="url(")),
    "css url(a repeated": lambda n: page(repeated("url(a", n)),
    "css @import ' repeated": lambda n: page(repeated("@import '", n)),
    "Link < repeated": lambda n: lambda: list(header_urls([("Link", "<" * n)])),
    "Link <a repeated": lambda n: lambda: list(header_urls([("Link", repeated("<a", n))])),
    "CSP many sources": lambda n: drained(csp_hosts, repeated(" a.example", n, "script-src")),
    "Refresh digits": lambda n: lambda: refresh_url("0" * n),
    "Refresh spaces": lambda n: lambda: refresh_url(" " * n + "x"),
    "Refresh open quote": lambda n: lambda: refresh_url(repeated("a", n, "0; url='")),
    "srcset open (": lambda n: drained(srcset_urls, repeated("a 1x (", n)),
    "srcset commas": lambda n: drained(srcset_urls, repeated("a (,", n)),
    'script "// repeated': lambda n: drained(script_urls, repeated('"//', n)),
    "script long authority": lambda n: drained(script_urls, repeated("a", n, '"//', "{")),
    "json-ld //a repeated": lambda n: json_ld(repeated("//a", n)),
    "robots Sitemap:": lambda n: drained(robots_sitemaps, repeated("Sitemap:x\n", n)),
}


def _child(name: str, sizes: tuple[int, int], sender) -> None:
    """Times the case at both sizes, alternating, ROUNDS times: a machine busy now and
    then weighs on both alike. Each time is sent as it comes."""
    calls = [CASES[name](size) for size in sizes]
    for _ in range(ROUNDS):
        for which, call in enumerate(calls):
            # CPU time: on a machine shared with other work, wall time counts their turns too.
            sender.send((which, timed(call, time.thread_time)))


def best_times(name: str, sizes: tuple[int, int]) -> list[float | None]:
    """The best time of the case at each size; None for the large one when a run went past
    LIMIT (the child is killed then), and for the small one too if it never ran."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(name, sizes, sender))
    child.start()
    times: list[list[float]] = [[], []]
    for _ in range(2 * ROUNDS):
        if not receiver.poll(LIMIT):
            break
        which, seconds = receiver.recv()
        times[which].append(seconds)
    if child.is_alive():
        child.kill()
    child.join()
    # The first size's best of the runs it had, if the second was killed.
    first, second = times
    return [min(first) if first else None, min(second) if len(second) == ROUNDS else None]


def main() -> int:
    small, large = (SMALL // 10, LARGE // 10) if "--quick" in sys.argv else (SMALL, LARGE)
    print(machine_line())
    print(f"# {len(CASES)} hostile inputs at {small:,} and {large:,} chars; best of {ROUNDS}")
    failed = 0
    for name in CASES:
        failed += not report(name, small, large)
    return 1 if failed else 0


def report(name: str, small: int, large: int) -> bool:
    first, second = best_times(name, (small, large))
    if first is None or second is None:
        shown = "killed" if first is None else f"{first:.4f} s at {small:,}, then killed"
        print(f"{name:<24} past {LIMIT:.0f} s: {shown}  {verdict(False, name, shown)}")
        return False
    ratio = second / max(first, 1e-6)
    ok = ratio <= TARGET
    value = f"{first:.4f} s, {second:.4f} s: {ratio:.1f}x"
    word = verdict(ok, name, value, f"<= {TARGET:.0f}x")
    print(
        f"{name:<24} {small:>9,}: {first:8.4f} s  {large:>9,}: {second:8.4f} s"
        f"  {ratio:5.1f}x  {word}"
    )
    return ok


if __name__ == "__main__":
    sys.exit(main())
