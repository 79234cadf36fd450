"""bench/churn.py's verdicts, on the after phase's samples (one a minute).

A verdict is given only on the volume the benchmark is for: at least MIN_MINUTES of
churn and MIN_ROW_UPDATES row updates. A shorter run prints its figures and no
verdict; a full-length run that did not reach the volume fails (the database did not
keep up); a watched crawler or a churn worker that died fails the run whatever the
figures.
"""

from __future__ import annotations

import statistics

from _common import verdict

WARMUP = 5  # minutes: the figures are judged from here on
MIN_MINUTES = 20
MIN_ROW_UPDATES = 5_000_000
DEAD_SHARE = 0.05  # dead tuples / rows of hosts (the queue is its columns since 0030)
SIZE_GROWTH = 1.10  # bytes per row of every table that grows, WARMUP -> end
LATENCY_GROWTH = 1.5  # claim p50 of the last 5 minutes / of minutes WARMUP..WARMUP+4
RSS_GROWTH = 1.10  # the crawler's RSS at the end / at WARMUP
TINY_MB = 1.0  # a table smaller than this at the end is not judged on its size
# Tables whose retention the run covers (bench/churn.py backfills root_claims' 65
# minutes): they start full, and their whole size may fall while their pages fill with
# dead space, so they are judged per row like the others even when they did not grow.
# (Judged on its whole size, root_claims passed while its bytes per row grew 28%.)
RETAINED = frozenset({"root_claims"})


def judged(after: list[dict], minutes: float) -> tuple[bool | None, str]:
    """(None: no verdict, False: the volume was missed, True: judge), and why."""
    last = after[-1]
    done = f"{last['minute']} min, {last['updates']:,} row updates"
    if minutes < MIN_MINUTES:
        return None, f"{done}: asked for {minutes:g} min; a verdict needs >= {MIN_MINUTES}"
    if last["updates"] < MIN_ROW_UPDATES:
        return False, f"{done}: the volume ({MIN_ROW_UPDATES:,} updates) was not reached"
    return True, done


def survived(ok: bool, judge: bool | None) -> bool | None:
    """A death fails any run; a short run's survival is no verdict."""
    return None if ok and judge is None else ok


def crawler_alive(after: list[dict], judge: bool | None) -> bool | None:
    """None without a crawler; False if it exited before the end or stopped crawling."""
    if "rss" not in after[0]:
        return None
    died = [s for s in after if s["crawler_exit"] is not None]
    start = after[WARMUP - 1] if len(after) > WARMUP else after[0]
    if died:
        value, detail = f"exited {died[0]['crawler_exit']}", f"by minute {died[0]['minute']}"
    else:
        pages = after[-1]["pages"] - start["pages"]
        value, detail = f"{pages:,} pages", f"crawled from minute {start['minute']} on"
    alive = not died and after[-1]["pages"] > start["pages"]
    word = verdict(survived(alive, judge), "crawler alive and crawling", value, "to the end")
    print(f"crawler: {value} ({detail}; it must crawl to the end) {word}")
    return alive


def verdicts(after: list[dict], before: list[dict], minutes: float) -> bool | None:
    """Print every figure with its verdict; the run's (None: no verdict)."""
    judge, why = judged(after, minutes)
    volume = f"{after[-1]['updates'] / 1e6:.2f}M updates in {after[-1]['minute']} min"
    target = f">= {MIN_ROW_UPDATES / 1e6:g}M in >= {MIN_MINUTES} min"
    print(f"volume: {why} {verdict(judge, 'churn volume', volume, target)}")
    warm = [s for s in after if s["minute"] >= WARMUP]
    if len(warm) < 2:  # a short run: its figures over all of it (and no verdict)
        warm = after
    ok = judge is not False
    for figure, good in (*dead_tuples(warm, before), *table_sizes(warm)):
        ok &= record(figure, good, judge)
    ok &= record(*claim_latency(warm), judge)
    if "rss" in warm[0]:
        ok &= record(*crawler_rss(warm), judge)
    alive = crawler_alive(after, judge)
    if not workers_alive(before + after, judge) or alive is False:
        return False
    return None if judge is None else ok


def workers_alive(samples: list[dict], judge: bool | None) -> bool:
    """The churn's own workers ran to the end (a worker's traceback is printed above)."""
    exited = next((s for s in samples if s["workers_exited"]), None)
    value = f"exited {exited['workers_exited']} by minute {exited['minute']}" if exited else "all"
    word = verdict(survived(exited is None, judge), "churn workers", value, "all, to the end")
    print(f"churn workers running: {value} (target: all, to the end) {word}")
    return exited is None


def record(figure: tuple[str, str, str, str], good: bool, judge: bool | None) -> bool:
    """Print one figure's line with its verdict (none on a short run); whether it passed."""
    name, value, target, detail = figure
    word = verdict(good if judge else None, name, value, target)  # judged at full volume only
    print(f"{name}: {value} ({detail}; target {target}) {word}")
    return good


def dead_tuples(warm: list[dict], before: list[dict]):
    for t in ("hosts",):
        worst = max(s["dead"][t] / max(1, s["rows"][t]) for s in warm)
        was = max((s["dead"][t] / max(1, s["rows"][t]) for s in before), default=float("nan"))
        detail = f"the most from minute {warm[0]['minute']}; before: up to {was:.1%}"
        yield (
            (f"dead tuples {t}", f"{worst:.1%} of rows", f"< {DEAD_SHARE:.0%}", detail),
            (worst < DEAD_SHARE),
        )


def table_sizes(warm: list[dict]):
    """Bytes per row (table + indexes) of every table that grew (and of the RETAINED ones
    whatever their size did), from WARMUP to the end: rows may come (new hosts, new
    hours), bloat may not."""
    first, last = warm[0], warm[-1]
    for t in sorted(last["bytes"]):
        start, end = first["bytes"].get(t, 0), last["bytes"][t]
        if t not in RETAINED and (end <= start or end < TINY_MB * 2**20):
            continue
        per_row = [s["bytes"].get(t, 0) / max(1, s["rows"].get(t, 0)) for s in (first, last)]
        growth = per_row[1] / max(per_row[0], 1.0)
        detail = (
            f"{start / 2**20:.1f} -> {end / 2**20:.1f} MB, {first['rows'][t]:,} -> "
            f"{last['rows'][t]:,} rows, {per_row[0]:.0f} -> {per_row[1]:.0f} B/row,"
            f" minutes {first['minute']}-{last['minute']}"
        )
        name = f"size of {t} per row"
        yield (name, f"x{growth:.2f}", f"< x{SIZE_GROWTH}", detail), growth < SIZE_GROWTH


def claim_latency(warm: list[dict]):
    early = statistics.median([s["p50"] for s in warm[:5]])
    late = statistics.median([s["p50"] for s in warm[-5:]])
    ratio = late / early
    first, last = warm[:5], warm[-5:]
    detail = (
        f"median p50 {early:.1f} ms (minutes {first[0]['minute']}-{first[-1]['minute']})"
        f" -> {late:.1f} ms (minutes {last[0]['minute']}-{last[-1]['minute']})"
    )
    return ("claim latency", f"x{ratio:.2f}", f"<= x{LATENCY_GROWTH}", detail), (
        ratio <= LATENCY_GROWTH
    )


def crawler_rss(warm: list[dict]):
    rss = warm[-1]["rss"] / warm[0]["rss"]
    pages = warm[-1]["pages"] - warm[0]["pages"]
    detail = (
        f"{warm[0]['rss']:.0f} MB at minute {warm[0]['minute']} -> {warm[-1]['rss']:.0f} MB"
        f" at {warm[-1]['minute']} over {pages:,} pages"
    )
    return ("crawler RSS", f"x{rss:.2f}", f"<= x{RSS_GROWTH}", detail), rss <= RSS_GROWTH
