"""The dashboard's charts as server-side SVG: axes, labels and a legend, no JavaScript.

Chosen over a vendored chart library: the CSP stays `default-src 'self'` with
nothing to load or run, the charts render with the page (also without
JavaScript, and in the tests' HTML), and two simple charts need about a hundred
lines. Colours are presentation attributes (not `style=`), so the CSP's
style-src is not involved either. Every label is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from crawler.db.pages.dashboard import OUTCOME_GROUPS, Timeline

COLOURS = {"OK": "#2b8a3e", "HTTP": "#e8a317", "NETWORK": "#c92a2a", "IGNORED": "#868e96"}
LINE = "#1c5fb0"
TEXT = 'font-size="11" fill="#343a40"'  # presentation attributes, not style=
TITLE = 'font-size="12" fill="#343a40"'
WIDTH, HEIGHT = 640, 240
ROOTS_WIDTH = 480  # the CSS draws each chart at least this wide: text stays >= 11 px
LABEL_CHARS = 28  # of a root's name beside its bar (the bar's tooltip has it whole)
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 14, 84


def short(value: float) -> str:
    """An axis label: 950, 1.2k, 2.5M, 1B (a 7-digit count fits the axis)."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.2f}".rstrip("0").rstrip(".") + suffix
    return f"{value:,.0f}"


def cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def nice_top(peak: int) -> int:
    """The y axis' top: 1, 2 or 5 times a power of ten, at least the peak."""
    top = 1
    while True:
        for m in (1, 2, 5):
            if top * m >= peak:
                return top * m
        top *= 10


def time_chart(timeline: Timeline) -> Markup:
    """Hosts crawled per hour (bars stacked by outcome) and discovered (a line)."""
    hours, crawled = timeline.hours, timeline.crawled
    if not hours:
        return Markup('<p class="help">No hours to show yet.</p>')
    totals = timeline.crawled_total
    top = nice_top(max([*totals, *timeline.discovered, 1]))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(hours)

    def y(value: float) -> float:
        return TOP + plot_h - value / top * plot_h

    parts = [_axes(top, plot_w, plot_h, "hosts per hour")]
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
        if i % max(1, len(hours) // 6) == 0:
            parts.append(
                f'<text x="{LEFT + (i + 0.5) * slot:.1f}" y="{TOP + plot_h + 14}"'
                f' text-anchor="middle" {TEXT}>{hour:%H}:00</text>'
            )
    points = " ".join(
        f"{LEFT + (i + 0.5) * slot:.1f},{y(n):.1f}" for i, n in enumerate(timeline.discovered)
    )
    parts.append(f'<polyline points="{points}" fill="none" stroke="{LINE}" stroke-width="2"/>')
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h + 30}" text-anchor="middle"'
        f" {TITLE}>hour (UTC), {hours[0]:%Y-%m-%d %H}:00 to {hours[-1]:%H}:00</text>"
    )
    legend = [("line", LINE, "discovered")]
    legend += [("box", COLOURS[g], f"crawled: {OUTCOME_GROUPS[g]}") for g in crawled]
    parts.append(_legend(legend, TOP + plot_h + 44))
    return _svg(parts, "Hosts discovered and crawled per hour, by outcome", "time")


def roots_chart(top_roots: Sequence[tuple[str, int]]) -> Markup:
    """Horizontal bars: the roots with the most hosts, each labelled with its count."""
    if not top_roots:
        return Markup('<p class="help">No roots yet.</p>')
    row, label_w, value_w = 22, 190, 70
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
            f' fill="{LINE}"><title>{escape(domain)}: {n:,} hosts</title></rect>'
            f'<text x="{label_w + width + 4:.1f}" y="{y + 15}" {TEXT}>{n:,}</text>'
        )
    return _svg(parts, "The roots with the most hosts", "roots", ROOTS_WIDTH, height)


def _axes(top: int, plot_w: float, plot_h: float, title: str) -> str:
    """Both axes, y ticks at quarters with gridlines, and the y axis' title."""
    lines = [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#495057"/>',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}"'
        ' stroke="#495057"/>',
    ]
    for q in range(5):
        value = top * q / 4
        y = TOP + plot_h - plot_h * q / 4
        lines.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#dee2e6"/>'
            f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end" {TEXT}>'
            f"{short(value)}</text>"
        )
    lines.append(
        f'<text transform="translate(12 {TOP + plot_h / 2}) rotate(-90)" text-anchor="middle"'
        f" {TITLE}>{escape(title)}</text>"
    )
    return "".join(lines)


def _legend(items: list[tuple[str, str, str]], y: float) -> str:
    parts, x = [], LEFT
    for kind, colour, label in items:
        needed = 24 + 6.2 * len(label)
        if x > LEFT and x + needed > WIDTH:  # wrap to a new row
            x, y = LEFT, y + 16
        if kind == "line":
            parts.append(
                f'<line x1="{x}" y1="{y}" x2="{x + 14}" y2="{y}" stroke="{colour}"'
                ' stroke-width="2"/>'
            )
        else:
            parts.append(f'<rect x="{x}" y="{y - 5}" width="12" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 18}" y="{y + 4}" {TEXT}>{escape(label)}</text>')
        x += needed
    return "".join(parts)


def _svg(
    parts: list[str], title: str, kind: str, width: int = WIDTH, height: int = HEIGHT
) -> Markup:
    return Markup(
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"'
        f' class="plot {kind}"><title>{escape(title)}</title>{"".join(parts)}</svg>'
    )
