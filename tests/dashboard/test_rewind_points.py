"""Past chart points never vanish: after a hang, a kill and a restart that rewinds to the last checkpoint,
the loss points logged before the rewind stay on the chart (the earlier attempt, greyed) beside the
redone ones, in the API and on the run page in Chromium."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from alerts.clock import ManualClock
from monitor.storage import report_repo
from monitor.storage.db import make_sessionmaker
from monitor.web.dashboard.templating import epoch
from tests.dashboard.conftest import serving
from tests.dashboard.support import build, client
from tests.helpers import hang_then_restart_config, sim_id, tick

M = 60.0
T0 = 1_780_000_200.0
RUN = sim_id("hero-r")
CONFIG = hang_then_restart_config("hero-r")


def loss(api) -> dict:
    path = f"/api/runs/{quote(RUN, safe='')}"
    body = api.get(path, params={"metric": "train/loss", "max_points": 4096}).json()
    return body["series"]["train/loss"]


def test_points_before_a_rewind_stay_beside_the_redone_ones(db_url):
    clock = ManualClock(T0)
    service = build(db_url, clock, CONFIG)
    api = client(service)
    try:
        tick(service, clock, 45 * M, every=60)  # 35 minutes into the hang
        before = {b["x0"]: (b["t"], b["mean"]) for b in loss(api)["buckets"]}
        assert max(before) > 51, "steps past the last checkpoint were logged before the hang"
        tick(service, clock, 45 * M, every=60)  # killed at 50m, back from step 50 three minutes later
        after = loss(api)
        redone = {b["x0"]: b["t"] for b in after["buckets"] if b["x0"] in before and b["t"] > T0 + 50 * M}
        assert len(redone) >= 5, "the steps after the checkpoint were logged again"
        earlier = {b["x0"]: (b["t"], b["mean"]) for b in after["earlier"]}
        assert set(redone) <= set(earlier), "every redone step keeps its first attempt's point"
        for x in redone:
            assert earlier[x] == pytest.approx(before[x]), (x, "the earlier point as it was drawn before")
        kept = {b["x0"]: (b["t"], b["mean"]) for b in after["buckets"]}
        for x, point in before.items():
            assert kept.get(x) == pytest.approx(point) or earlier.get(x) == pytest.approx(point), (
                x,
                "a point drawn before the restart is still there",
            )
    finally:
        service.stop()
        service.db.dispose()


def test_the_reports_picture_of_the_hang_draws_the_run_up_to_it(db_url):
    """The costliest incidents' pictures read the stored series around the incident: the steps logged
    before the hang, redone after the restart, are drawn where they were first logged."""
    clock = ManualClock(T0)
    service = build(db_url, clock, CONFIG.replace("checkpoint_every: 50", "checkpoint_every: 40"))
    try:
        tick(service, clock, 90 * M, every=60)
        api = client(service)
        g = api.get(f"/api/runs/{quote(RUN, safe='')}").json()["goodput"]
        (stall,) = [i for i in g["incidents"] if i["kind"] == "stall"]
        start, end = epoch(stall["start"]), epoch(stall["end"])
        with make_sessionmaker(service.db)() as s:
            around = report_repo.buckets_around(s, RUN, "train/loss", start, end, 8)
            curve = report_repo.curve(s, RUN, "train/loss", T0, T0 + 2 * 3600)
        before = [t for t, *_ in around if t < start]
        assert len(before) == 8 and start - before[-1] < 30, "the steps up to the hang, though redone since"
        assert any(start - 30 < t <= start for t, _ in curve) and any(t > end for t, _ in curve)
    finally:
        service.stop()
        service.db.dispose()


EARLIER = """id => { const u = document.getElementById(id).uplot;
  const i = u.series.findIndex(s => s.label === 'before the rewind');
  if (i < 0) return null;
  return u.data[0].map((x, k) => [x, u.data[i][k]]).filter(p => p[1] != null); }"""


def test_the_run_page_draws_the_earlier_attempt_greyed(tmp_path, page, artifacts):
    clock = ManualClock(T0)
    service = build(f"sqlite:///{tmp_path / 'herowatch.db'}", clock, CONFIG)
    with serving(service, clock) as live:
        tick(service, clock, 90 * M, every=60)
        page.goto(live.url + "/runs/" + quote(RUN, safe=""))
        expect(page.locator("#chart-loss canvas")).to_have_count(1)
        expect(page.locator("#chart-loss .u-legend")).to_contain_text("before the rewind")
        points = page.evaluate(EARLIER, "chart-loss")
        assert points and len(points) >= 5, points
        payload = page.evaluate("JSON.parse(document.getElementById('chart-data').textContent)")
        (stall,) = [b for b in payload["bands"] if b["kind"] == "stall"]
        assert all(t <= stall["from"] + 1 for t, _ in points), "drawn where they were logged: before the hang"
        page.screenshot(path=str(artifacts / "run-rewind-earlier-points.png"), full_page=True)
        page.goto(live.url + "/runs/" + quote(RUN, safe="") + "?axis=step")
        expect(page.locator("#chart-loss .u-legend")).to_contain_text("before the rewind")
        steps = [x for x, _ in page.evaluate(EARLIER, "chart-loss")]
        assert min(steps) >= 50 and len(steps) >= 5, steps
        page.screenshot(path=str(artifacts / "run-rewind-earlier-points-step.png"), full_page=True)
        assert page.errors == []
