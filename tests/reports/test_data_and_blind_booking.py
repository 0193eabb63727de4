"""Data loading and source blind as a user sees them: a simulated run whose steps each wait 2 s of their
10 for data (logged as the trainer logs it) and whose rank hangs for 30 minutes, 10 of them while the
run's source cannot be read. The API, the run page and the report (JSON, Markdown, HTML, the Slack post)
book the same seconds: data loading, hung where herowatch saw it, source blind where it could not; and
the buckets still add up to wall-clock x GPUs for every period."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from alerts.clock import ManualClock
from monitor.reports import words as w
from monitor.reports.model import Report
from monitor.reports.slack_post import post
from tests.dashboard.support import build, client
from tests.helpers import page_seconds, sim_id, tick

M = 60.0
GPUS = 4
RUN = sim_id("hero-dl")
CONFIG = f"""
watch:
  - name: hero-dl
    poll_interval: 60s
    gpus: {GPUS}
    sim:
      seed: 6
      step_time: 10s
      data_wait: 2s
      checkpoint_every: 1000
      eval_every: 1000
      incidents:
        - {{kind: stall, at: 20m, duration: 30m}}    # no step from 20m to 50m ...
        - {{kind: outage, at: 30m, duration: 10m}}   # ... and the source unreadable from 30m to 40m
"""


@pytest.fixture
def svc(db_url):
    clock = ManualClock(1_780_000_200.0)
    service = build(db_url, clock, CONFIG)
    yield service, clock, client(service)
    service.stop()
    service.db.dispose()


def goodput(api) -> dict:
    return api.get(f"/api/runs/{quote(RUN, safe='')}").json()["goodput"]


def test_data_loading_and_source_blind_in_the_api_the_run_page_and_the_report(svc):
    service, clock, api = svc
    tick(service, clock, 35 * M, every=60)  # 15 minutes into the hang, 5 into the outage
    during = goodput(api)["lost_seconds"]
    assert 3 * M <= during["source_blind"] <= 6 * M, during
    assert 8 * M <= during["stalled"] <= 11 * M, ("the hang herowatch saw before the outage", during)

    tick(service, clock, 45 * M, every=60)
    g = goodput(api)
    lost = g["lost_seconds"]
    assert lost["source_blind"] == pytest.approx(10 * M, abs=1.5 * M), lost
    assert lost["stalled"] == pytest.approx(20 * M, abs=1.5 * M), lost
    assert lost["stalled"] >= during["stalled"], "what was shown as hung stays hung"
    stepping = g["productive_seconds"] + lost["data_loading"]
    assert lost["data_loading"] == pytest.approx(0.2 * stepping, rel=0.1), (lost, g["productive_seconds"])
    seen = g["wall_seconds"] - lost["source_blind"]
    assert g["ratio"] == pytest.approx(g["productive_seconds"] / seen, abs=1e-3)

    html = api.get("/runs/" + quote(RUN, safe="")).text
    for bucket in ("data_loading", "source_blind", "stalled"):
        assert page_seconds(html, bucket) == pytest.approx(lost[bucket], abs=M), bucket
    assert "Data loading" in html and "Source blind" in html

    body = api.get("/api/report", params={"since": "2h"}).json()
    (run,) = [r for r in body["runs"] if r["run"] == RUN]
    for bucket in ("data_loading", "source_blind", "stalled"):
        assert run["hours"][bucket] * 3600 == pytest.approx(lost[bucket], abs=M), bucket
    md = api.get("/api/report", params={"since": "2h", "format": "md"}).text
    header = next(line for line in md.splitlines() if line.startswith("| run | watched"))
    assert "| data loading |" in header and "| source blind |" in header
    assert "could not see" in md
    page = api.get("/api/report", params={"since": "2h", "format": "html"}).text
    assert f'fill="{w.COLORS["source_blind"]}"' in page and f'fill="{w.COLORS["data_loading"]}"' in page
    assert '<th class="num">source blind</th>' in page
    slack = post(Report.model_validate(body), "Weekly report", None, "see /reports").text
    assert "could not see" in slack and "data loading" in slack


def test_with_the_new_buckets_the_buckets_still_add_up_to_wall_clock_times_gpus(svc):
    service, clock, api = svc
    tick(service, clock, 80 * M, every=60)
    for since in ("2h", "1h", "45m", "30m"):
        body = api.get("/api/report", params={"since": since}).json()
        (run,) = [r for r in body["runs"] if r["run"] == RUN]
        hours = run["hours"]
        assert {"data_loading", "source_blind"} <= set(hours)
        assert sum(hours.values()) == pytest.approx(run["watched_hours"], abs=1e-3), since
        for bucket, h in hours.items():
            assert run["gpu_hours"][bucket] == pytest.approx(h * GPUS, abs=1e-3), (since, bucket)
    body = api.get("/api/report", params={"since": "2h"}).json()
    (run,) = body["runs"]
    assert run["hours"]["source_blind"] > 0 and run["hours"]["data_loading"] > 0
    g = goodput(api)
    assert sum(run["hours"].values()) * 3600 == pytest.approx(g["wall_seconds"], abs=M)
