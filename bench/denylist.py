"""µs per hostname lookup in DenyList at 1k..1M entries, against Scrapy's offsite regex.

Targets:
  * DenyList is flat: µs/host at 1M entries <= 1.5 x µs/host at 1k entries.
  * DenyList is >= 100 x faster than Scrapy's OffsiteMiddleware host regex at 10k entries.

The baseline is the regex Scrapy 2.19 builds from `allowed_domains`
(OffsiteMiddleware.get_host_regex: ^(.*\\.)?(a\\.com|b\\.org|...)$, used with
.search()), which answers the same question ("is the name an entry or under
one?") for the same probe names, in the same process, rounds interleaved.
"""

from __future__ import annotations

import random

from _common import Runs, deny_entries, fresh, machine_line, probe_hosts, timed, verdict
from scrapy import Spider
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware

from crawler.core.denylist import BLOCKED, NO_FOLLOW, DenyList
from crawler.core.hostnames import parents

SIZES = (1_000, 10_000, 100_000, 1_000_000)
REGEX_SIZES = (1_000, 10_000)
PROBES = 100_000
REGEX_PROBES = 20_000  # a prefix of the same probes: the regex is slow
ROUNDS = 7
FLAT_TARGET = 1.5
SPEEDUP_TARGET = 100.0
SPEEDUP_AT = 10_000


def label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1_000}k"


def scrapy_regex(domains: list[str]):
    """The exact pattern Scrapy's offsite middleware compiles for these allowed_domains."""
    spider = Spider(name="bench", allowed_domains=domains)
    return OffsiteMiddleware(stats=None).get_host_regex(spider)


def dict_lookups(denylist: DenyList, names: list[str]) -> float:
    """Mean set look-ups DenyList.denial makes per name (the walk stops at the nearest entry)."""
    total = 0
    for name in names:
        denial = denylist.denial(name)
        chain = parents(name)
        total += chain.index(denial.entry) + 1 if denial else len(chain)
    return total / len(names)


def contains_all(names_set: set[str], names: list[str]) -> None:
    for name in names:
        name in names_set  # noqa: B015 -- the look-up is what is timed


def one_lookup_costs(cases, rng: random.Random) -> dict[tuple[int, str], Runs]:
    """ns per single set look-up, hit and miss, in the smallest and the biggest table.

    The algorithm's work per name does not change with size; this shows what one
    unit of that work costs once the table is out of the CPU caches.
    """
    costs = {}
    for size in (SIZES[0], SIZES[-1]):
        table = set(cases[size][0].entries())  # a set like DenyList's, of its entries
        entries = list(table)
        kinds = {
            "hit": [rng.choice(entries) for _ in range(PROBES)],
            "miss": [f"x{rng.choice(entries)}" for _ in range(PROBES)],
        }
        for kind, names in kinds.items():
            runs = costs[(size, kind)] = Runs()
            for _ in range(ROUNDS):
                fresh_names = fresh(names)
                runs.add(timed(lambda t=table, n=fresh_names: contains_all(t, n)) / PROBES)
    return costs


def lookup_all(denial, names: list[str]) -> None:
    for name in names:
        denial(name)


def search_all(search, names: list[str]) -> None:
    for name in names:
        search(name)


def main() -> None:
    rng = random.Random(20261130)
    print(machine_line())
    print(f"# building {label(SIZES[-1])} deny entries and {PROBES:,} probe names per size ...")
    universe = deny_entries(SIZES[-1], rng)
    cases = {}
    for size in SIZES:
        entries = universe if size == len(universe) else rng.sample(universe, size)
        denylist = DenyList((e, rng.choice((BLOCKED, NO_FOLLOW))) for e in entries)
        probes = probe_hosts(entries, PROBES, rng)
        denied = sum(denylist.denial(p) is not None for p in probes)
        regex = scrapy_regex(entries) if size in REGEX_SIZES else None
        cases[size] = (denylist, probes, regex)
        print(
            f"# {label(size)}: {len(denylist):,} entries, probes {denied / PROBES:.0%} denied,"
            f" mean {sum(p.count('.') + 1 for p in probes) / PROBES:.1f} labels,"
            f" {dict_lookups(denylist, probes):.2f} set look-ups/host"
        )
        if regex is not None:
            sample = probes[:REGEX_PROBES]
            wrong = sum(
                (regex.search(p) is not None) != (denylist.denial(p) is not None) for p in sample
            )
            print(f"#   regex agrees with DenyList on {len(sample) - wrong:,}/{len(sample):,}")

    ours = {size: Runs() for size in SIZES}
    theirs = {size: Runs() for size in REGEX_SIZES}
    # Diagnostic: the biggest table probed with the smallest case's names, to tell
    # "the table is bigger" apart from "the probes touch more distinct entries".
    big, small = SIZES[-1], SIZES[0]
    cross = Runs()
    # Warm-up round, then rounds that interleave every configuration so drift
    # on a noisy machine hits them all alike.
    for round_no in range(ROUNDS + 1):
        for size in SIZES:
            denylist, probes, regex = cases[size]
            names = fresh(probes)
            seconds = timed(lambda d=denylist.denial, n=names: lookup_all(d, n))
            if round_no:
                ours[size].add(seconds / len(names))
            if regex is not None:
                names = fresh(probes[:REGEX_PROBES])
                seconds = timed(lambda s=regex.search, n=names: search_all(s, n))
                if round_no:
                    theirs[size].add(seconds / len(names))
        names = fresh(cases[small][1])
        seconds = timed(lambda d=cases[big][0].denial, n=names: lookup_all(d, n))
        if round_no:
            cross.add(seconds / len(names))

    us = 1e6
    print(f"# best of {ROUNDS} interleaved rounds [median], gc off while timed")
    for size in SIZES:
        r = ours[size]
        print(
            f"denylist {label(size)} entries: {r.best * us:.3f} µs/host"
            f" [median {r.median * us:.3f}] ({PROBES:,} probes)"
        )
    print(
        f"denylist {label(big)} entries, the {label(small)} case's probes: {cross.best * us:.3f}"
        f" µs/host [median {cross.median * us:.3f}] (diagnostic: same names, bigger table)"
    )
    costs = one_lookup_costs(cases, rng)
    for (size, kind), runs in costs.items():
        print(
            f"one set look-up ({kind}) in the {label(size)} table: {runs.best * 1e9:.0f} ns"
            f" [median {runs.median * 1e9:.0f}] (diagnostic: the cost of one unit of work)"
        )
    for size in REGEX_SIZES:
        r = theirs[size]
        print(
            f"scrapy offsite regex {label(size)} entries: {r.best * us:.2f} µs/host"
            f" [median {r.median * us:.2f}] ({REGEX_PROBES:,} probes)"
        )

    base = ours[small].best
    for size in SIZES[1:]:
        ratio = ours[size].best / base
        figure = f"lookup at {label(size)} vs {label(small)} entries"
        word = verdict(ratio <= FLAT_TARGET, figure, f"x{ratio:.2f}", f"<= x{FLAT_TARGET}")
        print(
            f"denylist {label(size)} entries: {ours[size].best * us:.3f} µs/host"
            f" (ratio vs {label(small)}: {ratio:.2f}, target <= {FLAT_TARGET}) {word}"
        )
    for size in REGEX_SIZES:
        speedup = theirs[size].best / ours[size].best
        target = "no target)"
        if size == SPEEDUP_AT:
            figure, value = f"vs offsite regex at {label(size)}", f"x{speedup:.0f}"
            word = verdict(speedup >= SPEEDUP_TARGET, figure, value, f">= x{SPEEDUP_TARGET:.0f}")
            target = f"target >= {SPEEDUP_TARGET:.0f}x) {word}"
        print(
            f"denylist vs scrapy regex {label(size)} entries: {ours[size].best * us:.3f}"
            f" vs {theirs[size].best * us:.2f} µs/host (speedup {speedup:.0f}x, {target}"
        )


if __name__ == "__main__":
    main()
