"""The /reports page in Chromium at 1400 and 800 px over the simulated week: the report of the last
full week with its pictures, the week picker, no CSP error, nothing wider than the screen but the
tables' own scroll boxes; screenshots in test-artifacts/screens for a person to look at."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from alerts.clock import ManualClock
from tests import report_week as rw
from tests.dashboard.conftest import serving
from tests.dashboard.support import build

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
