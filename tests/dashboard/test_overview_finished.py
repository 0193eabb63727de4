"""The overview puts the live runs first and last week's finished runs apart (Chromium): a run over for
more than a day with nothing open sits in a collapsed "Finished" list below the live ones, counted in the
head; one that ended an hour ago is still among the live runs, and when it has been over for a day the
5-second refresh moves its row into the Finished list without a reload. A run that crashed long ago
with its alert still firing stays live: an open incident is never tucked away."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from alerts.clock import ManualClock
from tests.dashboard.conftest import serving
from tests.dashboard.support import build

# last-week finishes 30 minutes in, recent 22 hours before the test looks (26 h in), crashed-old
# crashes 30 minutes in (run_crashed fires and stays firing); steady runs on.
CONFIG = """
watch:
  - name: steady
    poll_interval: 60s
    sim: {seed: 3, step_time: 20s}
  - name: last-week
    poll_interval: 60s
    sim: {seed: 4, step_time: 20s, finish_after: 30m}
  - name: recent
    poll_interval: 60s
    sim: {seed: 5, step_time: 20s, finish_after: 26h}
  - name: crashed-old
    poll_interval: 60s
    sim:
      seed: 6
      step_time: 20s
      incidents: [{kind: crash, at: 30m}]
"""

LIVE = "ol.runs.live > li.run"
FINISHED = "ol.finished-runs > li.run"


def row(name: str) -> str:
    return f"li.run[data-run='sim:{name}/{name}']"


@pytest.fixture
def week(tmp_path: Path):  # noqa: ANN201
    clock = ManualClock(1_780_000_000.0)
    service = build(f"sqlite:///{tmp_path / 'herowatch.db'}", clock, CONFIG)
    with serving(service, clock) as live:
        live.tick(60 * 60)  # the first hour poll by poll: the finish and the crash seen as they come
        live.tick(47 * 3600, every=1800)  # then two days, a poll every half hour
        yield live


def test_finished_runs_sit_apart_collapsed_and_a_run_moves_there_a_day_after_it_ended(week, page, artifacts):
    runs = {r["name"]: r for r in week.api("/api/runs")}
    assert runs["last-week"]["state"] == "finished" and runs["recent"]["state"] == "finished"
    assert runs["crashed-old"]["active_alerts"], "its crash alert is still firing"

    page.goto(week.url + "/")
    live_ids = [row(n).split("'")[1] for n in ("crashed-old", "steady", "recent")]
    expect(page.locator(LIVE)).to_have_count(3)
    assert [li.get_attribute("data-run") for li in page.locator(LIVE).all()] == live_ids, "urgency order"
    expect(page.locator(f"{LIVE}{row('recent')[len('li.run') :]} .badge")).to_have_text("ENDED")
    box = page.locator("details.finished")
    expect(box).to_be_attached()
    assert box.get_attribute("open") is None, "collapsed"
    expect(box.locator("summary")).to_contain_text("Finished 1")
    expect(box.locator("summary")).to_contain_text("over for more than 1d")
    expect(page.locator(f"ol.finished-runs {row('last-week')}")).to_be_hidden()  # collapsed
    expect(page.locator(".summary .count")).to_have_text("3 live runs")
    expect(page.locator(".summary .finished-count")).to_have_text("1 finished")
    page.screenshot(path=str(artifacts / "overview-finished-collapsed.png"), full_page=True)

    box.locator("summary").click()
    finished = page.locator(f"ol.finished-runs {row('last-week')}")
    expect(finished).to_be_visible()
    expect(finished.locator(".badge")).to_have_text("FINISHED")
    opacity = finished.evaluate("li => getComputedStyle(li).opacity")
    assert float(opacity) < 1, "de-emphasised"
    page.screenshot(path=str(artifacts / "overview-finished-open.png"), full_page=True)

    page.evaluate("() => { window.__notReloaded = true; }")
    week.tick(3 * 3600, every=1800)  # recent has now been over for more than a day
    expect(page.locator(f"ol.finished-runs {row('recent')}")).to_be_visible()  # moved, still open
    expect(page.locator(LIVE)).to_have_count(2)
    expect(page.locator(FINISHED)).to_have_count(2)
    expect(box.locator("summary .n")).to_have_text("2")
    expect(page.locator(".summary .finished-count")).to_have_text("2 finished")
    assert page.evaluate("window.__notReloaded") is True, "moved by the refresh, not a reload"
    assert [li.get_attribute("data-run") for li in page.locator(FINISHED).all()] == [
        row(n).split("'")[1] for n in ("last-week", "recent")
    ]
    page.screenshot(path=str(artifacts / "overview-finished-moved.png"), full_page=True)
    assert page.errors == [] and page.dialogs == []
