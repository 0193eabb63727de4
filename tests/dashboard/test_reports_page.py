"""The /reports page in Chromium at 1400 and 800 px over the simulated week: the report of the last
full week with its pictures, the week picker, no CSP error, nothing wider than the screen but the
tables' own scroll boxes; screenshots in test-artifacts/screens for a person to look at."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from sqlalchemy import func, select

from alerts.clock import ManualClock
from monitor.storage import series
from monitor.storage.models import SeriesBucket
from monitor.storage.series import Point
from tests import report_week as rw
from tests.dashboard.conftest import serving
from tests.dashboard.support import build

pytestmark = pytest.mark.slow  # a minute or more: handed to a worker early (tests/conftest.py)

CONFIG = """
watch:
  - name: hero
    gpus: 703
    target_step: 60000
    sim: {run: hero-1}
"""


@pytest.fixture
def week_live(tmp_path):
    clock = ManualClock(rw.WEEK0 + 8 * rw.DAY + 3 * rw.H)
    service = build(f"sqlite:///{tmp_path / 'herowatch.db'}", clock, CONFIG)
    with service.sessions() as s:
        rw.build(s)
    with serving(service, clock) as live:
        yield live


@pytest.mark.parametrize("width", [1400, 800])
def test_the_reports_page_at_two_widths(week_live, page, artifacts, width):
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(week_live.url + "/reports")
    expect(page.get_by_role("heading", level=1)).to_contain_text("week of 2026-11-23")
    expect(page.locator(".headline")).to_contain_text("each during a checkpoint save")
    expect(page.locator(".headline")).to_contain_text("Costliest: stall of hero-1 at")
    assert page.locator("article.report svg").count() >= 5, "bars, timeline, the three costliest, loss"
    assert page.locator('nav a[aria-current="page"]').inner_text() == "Reports"
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than a {width}px screen"
    page.screenshot(path=str(artifacts / "screens" / f"reports-{width}.png"), full_page=False)
    page.locator("#incidents").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "screens" / f"reports-{width}-incidents.png"), full_page=False)
    page.get_by_role("link", name="← week before").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("week of 2026-11-16")
    assert page.errors == [], page.errors


def test_the_report_prints_without_the_picker(week_live, page, artifacts):
    page.goto(week_live.url + "/reports")
    page.emulate_media(media="print")
    assert not page.locator("form.report-picker").is_visible()
    pdf = page.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
    (artifacts / "report.pdf").write_bytes(pdf)


def _points(attr: str) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in attr.split()]


def _straight(pts: list[tuple[float, float]]) -> bool:
    """Do all points lie on one line (within a pixel)?"""
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    length = max(1e-9, ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5)
    return all(abs((x1 - x0) * (y0 - y) - (x0 - x) * (y1 - y0)) / length <= 1.0 for x, y in pts)


@pytest.fixture
def coarse_week_live(tmp_path):
    """The week of a run whose stored loss series has become coarse (a long run: about 48 buckets for
    its whole life, hours each), as the demo's had: a picture of the window alone would be 2 points."""
    clock = ManualClock(rw.WEEK0 + 8 * rw.DAY + 3 * rw.H)
    service = build(f"sqlite:///{tmp_path / 'herowatch.db'}", clock, CONFIG)
    with service.sessions() as s:
        rw.build(s)
        (last,) = s.execute(select(func.max(SeriesBucket.x0))).one()
        series.ingest(s, rw.RUN, "train/loss", [Point(last + 1, 2.1, rw.WEEK0 + 8 * rw.DAY)], "step", 96)
        s.commit()
    with serving(service, clock) as live:
        yield live


def test_each_costliest_incident_draws_the_metrics_stored_points_around_it(coarse_week_live, page, artifacts):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(coarse_week_live.url + "/reports")
    cards = page.locator(".cards .card")
    expect(cards.first).to_be_visible()
    assert cards.count() == 3
    for i in range(3):
        card = cards.nth(i)
        lines = [
            _points(a)
            for a in card.locator("svg polyline").evaluate_all("ps => ps.map(p => p.getAttribute('points'))")
        ]
        pts = [p for line in lines for p in line]
        assert len(pts) > 2, f"card {i}: {len(pts)} points: the stored buckets around it are not drawn"
        assert any(len(line) > 2 and not _straight(line) for line in lines), f"card {i}: a straight line"
        kind = card.locator("strong").inner_text()
        assert card.locator("svg text.cause").text_content().startswith(kind + ":"), "its cause named on it"
        assert card.locator("svg rect.incident").count() == 1, "the incident shaded"
    stall = cards.nth(0)
    assert "stall: progress_stalled" in stall.locator("svg text.cause").text_content()
    stall.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "screens" / "reports-costliest.png"), full_page=False)
    assert page.errors == [], page.errors
