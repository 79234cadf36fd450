"""Every chart reads whole at 1280 and 420 px (issue 53, item 4): its axis' tick labels,
the axis' title and the legend are inside the viewport and inside whatever box scrolls
them (a 24-hour chart scrolling sideways took its scale, its "hosts per hour" and its
legend's left out of view on a phone), and no text covers another (the health chart's
"per second" title covered its 0.02 and 0.04 ticks). Measured in Chromium, from each
text's box as drawn."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from tests.browser.test_roots_browser import log_in

pytest_plugins = ["tests.unit.test_panel_support"]

WIDTHS = [1280, 420]
# Each visible chart: its class, the part of the page its scrolling boxes show (left,
# right), and each text's kind (tick, axis-title, legend or label), words and box.
CHART_TEXTS = """() => {
  const shown = svg => {
    let left = 0, right = window.innerWidth;
    for (let box = svg.parentElement; box; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== "visible") {
        const r = box.getBoundingClientRect();
        left = Math.max(left, r.left); right = Math.min(right, r.right);
      }
    }
    return [left, right];
  };
  return [...document.querySelectorAll("svg.plot")]
    .filter(svg => svg.getBoundingClientRect().width > 0)
    .map(svg => ({
      chart: svg.getAttribute("class"),
      shown: shown(svg),
      texts: [...svg.querySelectorAll("text")].map(t => {
        const r = t.getBoundingClientRect();
        return {kind: t.getAttribute("class") || "label", words: t.textContent,
                box: [r.left, r.top, r.right, r.bottom]};
      }),
    }));
}"""
SLACK = 0.5  # px: sub-pixel rounding


@pytest.fixture
def charts_with_small_rates(db, operators):
    """A day whose busiest hour discovered 2.5M hosts (the widest tick labels), a last hour
    of a few pages a minute (per-second ticks 0.02, 0.04...) with DNS and TCP failures
    (a legend of four), and roots with long names."""
    queue.save_hosts(
        db, [f"h{i}.a-rather-long-root-name{r}.test" for r in range(3) for i in range(4)]
    )
    with db.begin() as conn:
        conn.execute(text("DELETE FROM host_minutes"))  # the saves' own: not a small rate
        conn.execute(
            text(
                "INSERT INTO host_hours (hour, shard, discovered, ok)"
                " VALUES (date_trunc('hour', now()) - interval '3 hours', 99, 2500000, 1900000)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO host_minutes (minute, shard, crawled, discovered, dns, tcp)"
                " VALUES (date_trunc('minute', now()) - interval '10 minutes', 99, 3, 2, 1, 1)"
            )
        )


def overlap(a: list[float], b: list[float]) -> float:
    """The area two boxes (left, top, right, bottom) share, in px²."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(width, 0) * max(height, 0)


def problems(chart: dict) -> list[str]:
    """What reads wrong in one chart: text out of view, the title over a tick label, any
    two texts on top of each other."""
    left, right = chart["shown"]
    found = [
        f"{t['kind']} {t['words']!r} at {t['box'][0]:.0f}..{t['box'][2]:.0f} px,"
        f" outside {left:.0f}..{right:.0f}"
        for t in chart["texts"]
        if t["box"][0] < left - SLACK or t["box"][2] > right + SLACK
    ]
    texts = chart["texts"]
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            if overlap(a["box"], b["box"]) > SLACK:
                found.append(f"{a['kind']} {a['words']!r} covers {b['kind']} {b['words']!r}")
    return found


@pytest.mark.parametrize("width", WIDTHS)
def test_every_chart_keeps_its_axis_and_legend_in_view_and_no_text_covers_another(
    page, charts_with_small_rates, width
):
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "/")
    charts = page.evaluate(CHART_TEXTS)
    kinds = {chart["chart"].split()[1] for chart in charts}
    assert kinds == {"time", "health", "roots"}, kinds  # one 24-hour chart shown, not both
    found = {chart["chart"]: problems(chart) for chart in charts}
    assert found == {chart: [] for chart in found}
    axes = [chart for chart in charts if "roots" not in chart["chart"]]
    for chart in axes:
        kinds = {t["kind"] for t in chart["texts"]}
        assert {"tick", "axis-title", "legend"} <= kinds, (chart["chart"], kinds)
    health = next(c for c in axes if "health" in c["chart"])
    ticks = [t["words"] for t in health["texts"] if t["kind"] == "tick"]
    assert "0.02" in ticks and "0.04" in ticks, ticks  # the case the title covered
    day = next(c for c in axes if "time" in c["chart"])
    assert "hosts per hour" in [t["words"] for t in day["texts"] if t["kind"] == "axis-title"]
    assert "2.5M" in [t["words"] for t in day["texts"] if t["kind"] == "tick"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
