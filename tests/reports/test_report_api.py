"""``GET /api/report`` (JSON, Markdown, a self-contained HTML download) and the ``/reports`` page over the
simulated week; and the report of what the real engine wrote agrees with the run's own goodput."""

from __future__ import annotations

import re

import pytest

from alerts.clock import ManualClock
from tests import report_week as rw
from tests.dashboard.support import build, client
from tests.helpers import STALL_CONFIG, sim_id, tick

WEEK_CONFIG = """
watch:
  - name: hero
    gpus: 703
    sim: {run: hero-1}
"""


@pytest.fixture
def week_api(db_url):
    clock = ManualClock(rw.WEEK0 + 8 * rw.DAY + 3 * rw.H)  # Tuesday of the week after
    service = build(db_url, clock, WEEK_CONFIG)
    with service.sessions() as s:
        truth = rw.build(s)
    yield client(service), truth
    service.db.dispose()


def test_the_api_reports_the_last_full_week_by_default(week_api):
    api, truth = week_api
    r = api.get("/api/report")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["period"]["start"] == rw.WEEK0 and body["period"]["end"] == rw.WEEK0 + 7 * rw.DAY
    (run,) = body["runs"]
    assert run["gpus"] == 703 and run["gpus_from"] == "setting"
    assert run["hours"]["stalled"] == pytest.approx(4.5, abs=1 / 60)
    assert run["hours"]["down"] * 3600 == pytest.approx(truth.seconds["down"], abs=60)
    assert body["costliest"][0]["kind"] == "stall" and body["costliest"][0]["rules"] == ["progress_stalled"]
    assert any("each during a checkpoint save" in g["summary"] for g in body["recurring"])
    same = api.get("/api/report", params={"from": "2026-11-23", "to": "2026-11-30"}).json()
    assert same["runs"] == body["runs"]
    spec = api.get("/openapi.json").json()["paths"]["/api/report"]["get"]
    assert "reports" in spec["tags"] and {p["name"] for p in spec["parameters"]} >= {
        "from",
        "to",
        "watch",
        "since",
    }


def test_markdown_and_a_self_contained_html_download(week_api):
    api, _ = week_api
    md = api.get("/api/report", params={"format": "md", "week": "2026-11-25"})
    assert md.headers["content-type"].startswith("text/markdown")
    assert "oom_kills: " in md.text and "every ~3 h, each during a checkpoint save" in md.text
    assert "| hero-1 | 168 h |" in md.text
    page = api.get("/api/report", params={"format": "html", "week": "2026-11-25"})
    assert page.headers["content-disposition"].startswith("attachment;")
    html = page.text
    assert html.count("<svg") >= 3 and "<style>" in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "nothing is fetched from elsewhere"
    assert "progress_stalled" in html and "703 GPUs (setting)" in html


def test_bad_periods_and_names_are_clear_4xx(week_api):
    api, _ = week_api
    cases = [
        ({"since": "soon"}, 422, "since"),
        ({"from": "2026-13-40"}, 422, "not a date"),
        ({"from": "2026-11-30", "to": "2026-11-23"}, 422, "end after it starts"),
        ({"since": "7d", "week": "2026-11-23"}, 422, "one of"),
        ({"from": "2026-01-01", "to": "2026-11-30"}, 422, "at most 92 days"),
        ({"tz": "Mars/Olympus"}, 422, "time zone"),
        ({"watch": "nope"}, 404, "no watch"),
        ({"since": "x" * 500}, 422, ""),
    ]
    for params, status, words in cases:
        r = api.get("/api/report", params=params)
        assert r.status_code == status, (params, r.text)
        assert words in r.json()["error"], (params, r.text)


def test_the_reports_page_shows_the_week_with_a_picker(week_api):
    api, _ = week_api
    r = api.get("/reports")
    assert r.status_code == 200 and "Hero-run report" in r.text
    assert 'name="week" value="2026-11-23"' in r.text and "week before" in r.text
    assert r.text.count("<svg") >= 3 and "oom_kills: " in r.text
    assert api.get("/reports/report.css").status_code == 200
    earlier = api.get("/reports", params={"week": "2026-11-16"})
    assert earlier.status_code == 200 and "No pages." in earlier.text
    assert api.get("/reports", params={"week": "someday"}).status_code == 422


def test_what_the_engine_wrote_adds_up_to_the_runs_own_goodput(db_url):
    clock = ManualClock(1_780_000_000.0)
    service = build(db_url, clock, STALL_CONFIG)
    tick(service, clock, 3 * 3600, every=60)
    api = client(service)
    body = api.get("/api/report", params={"since": "4h"}).json()
    runs = {r["run"]: r for r in body["runs"]}
    status = {r["id"]: r for r in api.get("/api/runs").json()}
    for run_id in (sim_id("hero-a"), sim_id("hero-b")):
        mine, theirs = runs[run_id], status[run_id]["goodput"]
        assert mine["watched_hours"] * 3600 == pytest.approx(theirs["wall_seconds"], abs=60)
        for bucket, seconds in theirs["lost_seconds"].items():
            assert mine["hours"][bucket] * 3600 == pytest.approx(seconds, abs=60), (run_id, bucket)
    a = runs[sim_id("hero-a")]
    assert a["hours"]["stalled"] * 60 == pytest.approx(30, abs=2), "the 30-minute stall"
    assert a["gpus"] is None and "hours only" in body["gpu_note"]
    stall = [p for p in body["pages"] if p["rule"] == "progress_stalled"]
    assert len(stall) == 1 and 5 * 60 < stall[0]["detect_seconds"] < 20 * 60, "from the last step"
    service.db.dispose()
