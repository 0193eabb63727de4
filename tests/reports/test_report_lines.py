"""The report's line charts are broken where no data was stored: across a hang the headline-metric chart
("loss, incidents shaded") shows two pieces of line, not one straight line drawn through the shaded hang,
as the run page does; a gap with no incident on it (an outage, buckets dropped) breaks the line too."""

from __future__ import annotations

import re

import pytest

from alerts.clock import ManualClock
from monitor.reports import svg
from monitor.reports import words as w
from monitor.reports.model import Incident
from tests.dashboard.support import build, client
from tests.helpers import hang_then_restart_config, tick

M = 60.0


def _curve_svg(html: str, run_name: str) -> str:
    """The SVG of the run's headline chart in the report page."""
    for m in re.finditer(r"<svg .*?</svg>", html, re.S):
        if f"{run_name}: loss, incidents shaded" in m.group(0):
            return m.group(0)
    raise AssertionError(f"no loss chart of {run_name} in the report")


def _lines(picture: str) -> list[list[float]]:
    """The x coordinates of each drawn piece of line."""
    out = []
    for pts in re.findall(r'<polyline class="metric" points="([^"]*)"', picture):
        out.append([float(p.split(",")[0]) for p in pts.split()])
    return out


def test_the_loss_chart_of_a_run_that_hung_is_broken_across_the_hang(db_url):
    clock = ManualClock(1_780_000_200.0)
    service = build(db_url, clock, hang_then_restart_config("hero-gap"))
    try:
        tick(service, clock, 100 * M, every=60)
        html = client(service).get("/api/report", params={"since": "2h", "format": "html"}).text
    finally:
        service.stop()
        service.db.dispose()
    picture = _curve_svg(html, "hero-gap")
    band = rf'<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"[^>]*fill="{w.COLORS["stall"]}"'
    stall = re.search(band, picture)
    assert stall, picture[:2000]
    a, b = float(stall.group(1)), float(stall.group(1)) + float(stall.group(2))
    assert b - a > 100, "a 40-minute hang in a 2-hour chart is a wide band"
    lines = _lines(picture)
    assert len(lines) >= 2, "the line before the hang and the line after it are separate pieces"
    assert any(max(xs) <= a + 1 for xs in lines) and any(min(xs) >= b - 1 for xs in lines)
    for xs in lines:
        for x0, x1 in zip(xs, xs[1:], strict=False):
            assert not (x0 <= a + 1 and x1 >= b - 1), f"a line drawn across the hang ({x0} -> {x1})"


def test_a_gap_with_no_incident_breaks_the_line_too():
    times = [60.0 * i for i in range(30)] + [60.0 * i for i in range(70, 100)]  # 40 minutes of nothing
    parts = svg.segments(times, [])
    assert [len(p) for p in parts] == [30, 30]
    picture = svg.loss_curve([(t, 2.0 + t / 1e4) for t in times], [], 0.0, 6000.0, "r: loss")
    assert len(_lines(picture)) == 2


@pytest.mark.parametrize("spacing", [10.0, 600.0])
def test_even_spacing_is_one_line_at_any_bucket_width(spacing):
    times = [spacing * i for i in range(50)]
    assert svg.segments(times, []) == [list(range(50))]
    inc = Incident(
        run="r", kind="down", start=spacing * 20.5, end=spacing * 20.7, step=None, steps_redone=0,
        lost_hours=0.0, lost_gpu_hours=None, rules=[],
    )  # fmt: skip
    assert [len(p) for p in svg.segments(times, [inc])] == [50], "an incident between two points cuts nothing"
