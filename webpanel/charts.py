"""The dashboard's charts as server-side SVG: axes, labels and a legend, no JavaScript.

Chosen over a vendored chart library: the CSP stays `default-src 'self'` with
nothing to load or run, the charts render with the page (also without
JavaScript, and in the tests' HTML), and two simple charts need about a hundred
lines. Colours are presentation attributes (not `style=`), so the CSP's
style-src is not involved either. Every label is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

from crawler.core.words import counted
from webpanel.queries.dashboard import OUTCOME_GROUPS, Timeline
from webpanel.queries.health import Health

COLOURS = {"OK": "#2b8a3e", "HTTP": "#e8a317", "NETWORK": "#c92a2a", "IGNORED": "#868e96"}
LINE = "#1c5fb0"
TEXT = 'font-size="11" fill="#343a40"'  # presentation attributes, not style=
TITLE = 'font-size="12" fill="#343a40"'
WIDTH, PLOT_HEIGHT = 640, 142
NARROW = 360  # the CSS draws each chart at least this wide: text stays >= 11 px, and a
# chart this wide fits a 420-px phone whole (the top roots, their longest count included)
ROOTS_WIDTH = NARROW
LABEL_CHARS = 22  # of a root's name beside its bar (the bar's tooltip has it whole)
LEFT, RIGHT, TOP = 52, 12, 14
# A chart with a y axis: its title stands above the tick labels (rotated beside them, it
# covered the widest ones), so the plot starts lower.
AXIS_TOP = 30
LEGEND_ROW = 16


def short(value: float) -> str:
    """An axis label: 950, 1.2k, 2.5M, 1B (a 7-digit count fits the axis)."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.2f}".rstrip("0").rstrip(".") + suffix
    return f"{value:,.0f}"


def cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def nice_ticks(peak: float, most: int = 5, whole: bool = True) -> list[float]:
    """The y axis' ticks: 0 up to the first tick at or above `peak`, in steps of 1, 2 or 5
    times a power of ten, at most `most` steps (`whole`: never a step below 1, so a count's
    axis reads 0, 2, 4, 6, never 1.25)."""
    peak = peak if peak > 0 else 1
    rough = peak / most
    power = 10 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough * (1 - 1e-9))
    if whole:
        step = max(1, round(step))
    steps = math.ceil(peak / step - 1e-9)
    return [round(i * step, 9) for i in range(steps + 1)]


def tick_label(value: float, step: float) -> str:
    """A tick's label: short() for whole steps, else as many decimals as the step has."""
    if step >= 1 or value == 0:
        return short(value)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    if round(step * 10**decimals, 9) % 1:  # 0.25: one more
        decimals += 1
    return f"{value:.{decimals}f}"


def time_chart(timeline: Timeline) -> Markup:
    """Hosts crawled per hour (bars stacked by outcome) and discovered (a line), drawn
    twice: 640 wide, and 360 wide for a phone (the CSS shows one). A phone sees the whole
    day with its axis and legend, rather than a wide chart scrolling them out of view."""
    if not timeline.hours:
        return Markup('<p class="help">No hours to show yet.</p>')
    return Markup(_time_chart(timeline, WIDTH, "wide") + _time_chart(timeline, NARROW, "narrow"))


def _time_chart(timeline: Timeline, width: int, kind: str) -> Markup:
    hours, crawled = timeline.hours, timeline.crawled
    totals = timeline.crawled_total
    ticks = nice_ticks(max([*totals, *timeline.discovered, 1]))
    top = ticks[-1]
    plot_w, plot_h = width - LEFT - RIGHT, PLOT_HEIGHT
    slot = plot_w / len(hours)
    every = max(1, len(hours) // (6 if width > NARROW else 4))  # hours between two labels

    def y(value: float) -> float:
        return AXIS_TOP + plot_h - value / top * plot_h

    parts = [_axes(ticks, plot_w, plot_h, "hosts per hour")]
    for i, hour in enumerate(hours):
        x, base = LEFT + i * slot + slot * 0.15, 0
        for group, counts in crawled.items():
            n = counts[i]
            if n:
                label = f"{hour:%Y-%m-%d %H}:00 UTC: {n:,} crawled, {OUTCOME_GROUPS[group]}"
                parts.append(
                    f'<rect x="{x:.1f}" y="{y(base + n):.1f}" width="{slot * 0.7:.1f}"'
                    f' height="{y(base) - y(base + n):.1f}" fill="{COLOURS[group]}">'
                    f"<title>{escape(label)}</title></rect>"
                )
                base += n
        if (len(hours) - 1 - i) % every == 0:  # the newest hour has one, beside "0" none
            parts.append(
                f'<text x="{LEFT + (i + 0.5) * slot:.1f}" y="{AXIS_TOP + plot_h + 14}"'
                f' text-anchor="middle" {TEXT}>{hour:%H}:00</text>'
            )
    points = " ".join(
        f"{LEFT + (i + 0.5) * slot:.1f},{y(n):.1f}" for i, n in enumerate(timeline.discovered)
    )
    parts.append(f'<polyline points="{points}" fill="none" stroke="{LINE}" stroke-width="2"/>')
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{AXIS_TOP + plot_h + 30}" text-anchor="middle"'
        f" {TITLE}>hour (UTC), {hours[0]:%Y-%m-%d %H}:00 to {hours[-1]:%H}:00</text>"
    )
    legend = [("line", LINE, "discovered")]
    legend += [("box", COLOURS[g], f"crawled: {OUTCOME_GROUPS[g]}") for g in crawled]
    left = LEFT if width > NARROW else 8
    drawn, height = _legend(legend, AXIS_TOP + plot_h + 48, left, width)
    parts.append(drawn)
    title = "Hosts discovered and crawled per hour, by outcome"
    return _svg(parts, title, f"time {kind}", width, height)


HEALTH_WIDTH, HEALTH_PLOT_HEIGHT, HEALTH_LEFT = NARROW, 140, 40  # drawn whole on a phone
LAYER_COLOURS = {
    "DNS": "#c92a2a",
    "ADDRESS": "#862e9c",
    "TCP": "#e8590c",
    "TLS": "#f59f00",
    "HTTP": "#a0785a",
}
PAGES_LINE = "#343a40"


def health_chart(health: Health) -> Markup:
    """The last hour per minute: failures per second stacked by layer (bars), pages and
    new hostnames per second (lines). The minute under way is the last slot."""
    minutes = health.minutes
    if not minutes:
        return Markup('<p class="help">No minutes to show yet.</p>')
    failed = [sum(column) for column in zip(*health.failures.values(), strict=True)]
    ticks = nice_ticks(max([*health.pages, *health.discovered, *failed]), most=4, whole=False)
    top = ticks[-1]
    plot_w, plot_h = HEALTH_WIDTH - HEALTH_LEFT - RIGHT, HEALTH_PLOT_HEIGHT
    slot = plot_w / len(minutes)

    def x(i: float) -> float:
        return HEALTH_LEFT + i * slot

    def y(value: float) -> float:
        return AXIS_TOP + plot_h - value / top * plot_h

    parts = [_axes(ticks, plot_w, plot_h, "per second", HEALTH_LEFT)]
    for i, minute in enumerate(minutes):
        base = 0.0
        for layer, rates in health.failures.items():
            if rates[i]:
                label = f"{minute:%H:%M} UTC: {rates[i]:g}/s failed at {layer}"
                parts.append(
                    f'<rect x="{x(i):.1f}" y="{y(base + rates[i]):.1f}" width="{slot:.1f}"'
                    f' height="{y(base) - y(base + rates[i]):.1f}" fill="{LAYER_COLOURS[layer]}"'
                    # The bar's data, for a reader that is no eye (the browser tests).
                    f' data-layer="{layer}" data-minute="{minute:%H:%M}">'
                    f"<title>{escape(label)}</title></rect>"
                )
                base += rates[i]
        if (len(minutes) - 1 - i) % 15 == 0:  # the last one ends at the axis' end
            anchor, at = ("end", x(i + 1)) if i == len(minutes) - 1 else ("middle", x(i + 0.5))
            parts.append(
                f'<text x="{at:.1f}" y="{AXIS_TOP + plot_h + 14}" text-anchor="{anchor}"'
                f" {TEXT}>{minute:%H:%M}</text>"
            )
    for values, colour in ((health.pages, PAGES_LINE), (health.discovered, LINE)):
        points = " ".join(f"{x(i + 0.5):.1f},{y(v):.1f}" for i, v in enumerate(values))
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
    legend = [("line", PAGES_LINE, "pages"), ("line", LINE, "new hostnames")]
    legend += [("box", LAYER_COLOURS[layer], layer) for layer in health.failures]
    drawn, height = _legend(legend, AXIS_TOP + plot_h + 32, HEALTH_LEFT - 30, HEALTH_WIDTH)
    parts.append(drawn)
    title = "Pages, new hostnames and failures by layer per second, minute by minute"
    return _svg(parts, title, "health", HEALTH_WIDTH, height)


def roots_chart(top_roots: Sequence[tuple[str, int]]) -> Markup:
    """Horizontal bars: the roots with the most hosts, each labelled with its count."""
    if not top_roots:
        return Markup('<p class="help">No roots yet.</p>')
    row, label_w, value_w = 22, 150, 64  # value_w: "12,345,678" at 11 px
    height = TOP + row * len(top_roots) + 10
    peak = max(n for _, n in top_roots) or 1
    bar_w = ROOTS_WIDTH - label_w - value_w - RIGHT
    parts = []
    for i, (domain, n) in enumerate(top_roots):
        y = TOP + i * row
        width = max(1.0, n / peak * bar_w)
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" {TEXT}>'
            f"{escape(cut(domain, LABEL_CHARS))}</text>"
            f'<rect x="{label_w}" y="{y + 3}" width="{width:.1f}" height="{row - 6}"'
            f' fill="{LINE}"><title>{escape(domain)}: {counted(n, "host")}</title></rect>'
            f'<text x="{label_w + width + 4:.1f}" y="{y + 15}" {TEXT}>{n:,}</text>'
        )
    return _svg(parts, "The roots with the most hosts", "roots", ROOTS_WIDTH, height)


def _axes(ticks: list[float], plot_w: float, plot_h: float, title: str, left: int = LEFT) -> str:
    """Both axes, a gridline and a label at each tick, and the y axis' title above the
    tick labels, clear of the top one (AXIS_TOP leaves it the room)."""
    bottom = AXIS_TOP + plot_h
    lines = [
        f'<line x1="{left}" y1="{AXIS_TOP}" x2="{left}" y2="{bottom}" stroke="#495057"/>',
        f'<line x1="{left}" y1="{bottom}" x2="{left + plot_w}" y2="{bottom}" stroke="#495057"/>',
    ]
    top, step = ticks[-1], ticks[1] - ticks[0]
    for value in ticks:
        y = bottom - plot_h * value / top
        lines.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#dee2e6"/>'
            f'<text class="tick" x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" {TEXT}>'
            f"{tick_label(value, step)}</text>"
        )
    lines.append(
        f'<text class="axis-title" x="4" y="{AXIS_TOP - 14}" {TITLE}>{escape(title)}</text>'
    )
    return "".join(lines)


def _legend(
    items: list[tuple[str, str, str]], y: float, left: int = LEFT, width: int = WIDTH
) -> tuple[str, float]:
    """The legend from `y` down, wrapped to `width`; and the chart's height below it."""
    parts, x = [], left
    for kind, colour, label in items:
        needed = 26 + sum(7.6 if c.isupper() else 6.4 for c in label)  # at 11 px
        if x > left and x + needed > width:  # wrap to a new row
            x, y = left, y + LEGEND_ROW
        if kind == "line":
            parts.append(
                f'<line x1="{x}" y1="{y}" x2="{x + 14}" y2="{y}" stroke="{colour}"'
                ' stroke-width="2"/>'
            )
        else:
            parts.append(f'<rect x="{x}" y="{y - 5}" width="12" height="10" fill="{colour}"/>')
        parts.append(f'<text class="legend" x="{x + 18}" y="{y + 4}" {TEXT}>{escape(label)}</text>')
        x += needed
    return "".join(parts), y + LEGEND_ROW - 4


def _svg(parts: list[str], title: str, kind: str, width: int, height: float) -> Markup:
    return Markup(
        f'<svg viewBox="0 0 {width} {height:g}" role="img" aria-label="{escape(title)}"'
        f' class="plot {kind}"><title>{escape(title)}</title>{"".join(parts)}</svg>'
    )
