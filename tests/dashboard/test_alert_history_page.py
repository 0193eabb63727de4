"""`/alerts/history` in Chromium: every alert of a time range, with absolute times beside relative ones,
filtered from its form; a bad time is said on the page; no sideways scroll at 800 px."""

from __future__ import annotations

import re

from playwright.sync_api import expect


def test_the_history_page_lists_with_absolute_times_and_filters(live, page, artifacts):
    live.tick(60 * 60)
    page.goto(live.url + "/alerts")
    page.locator("a.history-link").click()
    expect(page).to_have_url(re.compile(r"/alerts/history$"))
    rows = page.locator("table.history-table tbody tr")
    expect(rows).to_have_count(4)
    stall = rows.filter(has_text="progress_stalled")
    expect(stall.locator("td.started .abs")).to_have_text(re.compile(r"^\(\d\d:\d\d UTC\)$"))
    expect(stall.locator("td.started time")).to_have_text(re.compile(r" ago$"))
    expect(stall.locator("td.ended .abs")).to_have_text(re.compile(r"^\(\d\d:\d\d UTC\)$"))
    expect(stall).to_contain_text("now: last step")
    expect(rows.filter(has_text="run_restarted").locator("td.ended")).to_have_text("still firing")
    page.screenshot(path=str(artifacts / "alert-history-1400.png"), full_page=True)
    page.fill("input[name=rule]", "progress_stalled")
    page.locator("form.history-filter button").click()
    expect(rows).to_have_count(1)
    page.fill("input[name=from]", "last tuesday")
    page.locator("form.history-filter button").click()
    expect(page.locator("p.error")).to_contain_text("is not a time")
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(live.url + "/alerts/history")
    assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 800, "scrolls sideways at 800px"
    page.screenshot(path=str(artifacts / "alert-history-800.png"), full_page=True)
