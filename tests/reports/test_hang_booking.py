"""A hang ended by a kill and a restart, as the demo has it, booked as it happened in the API, on the run
page and in the report: hung from the last step to the kill, restarting from the kill to the first new
step, the redone steps as lost work; what was shown as stalled while the hang lasted is never relabelled.
And the identity every report keeps: the buckets add up to the wall time (x GPUs) of every run and period.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from alerts.clock import ManualClock
from tests.dashboard.support import build, client
from tests.helpers import hang_then_restart_config, sim_id, tick
from tests.helpers import page_seconds as shown_seconds

M = 60.0
GPUS = 8
RUN = sim_id("hero-h")
HANG_CONFIG = hang_then_restart_config("hero-h", gpus=GPUS)


def goodput(api) -> dict:
    return api.get(f"/api/runs/{quote(RUN, safe='')}").json()["goodput"]


def page_seconds(api, bucket: str) -> float:
    """The time the run page's goodput table gives a bucket."""
    return shown_seconds(api.get("/runs/" + quote(RUN, safe="")).text, bucket)


@pytest.fixture
def hang(db_url):
    clock = ManualClock(1_780_000_200.0)
    service = build(db_url, clock, HANG_CONFIG)
    api = client(service)
    yield service, clock, api
    service.stop()
    service.db.dispose()


def test_a_hang_then_restart_is_booked_hung_then_restarting_in_the_api_page_and_report(hang):
    service, clock, api = hang
    tick(service, clock, 45 * M, every=60)  # 35 minutes into the hang
    during = goodput(api)
    assert during["lost_seconds"]["stalled"] > 30 * M, during
    shown = page_seconds(api, "stalled")
    assert shown == pytest.approx(during["lost_seconds"]["stalled"], abs=M)

    tick(service, clock, 45 * M, every=60)  # killed at 50m, back 3 minutes later
    after = goodput(api)
    lost = after["lost_seconds"]
    assert lost["stalled"] >= during["lost_seconds"]["stalled"], "a hang shown is never relabelled"
    assert 39 * M < lost["stalled"] < 41 * M, lost
    restore = lost["startup"] - during["lost_seconds"]["startup"]
    assert 3 * M <= restore < 5 * M, ("the new process's start to its first step: the restore", lost)
    assert lost["restarting"] - during["lost_seconds"]["restarting"] < M, "it started when the old was killed"
    assert lost["rework"] > 0
    stall, restart = [i for i in after["incidents"] if i["kind"] in ("stall", "restart")]
    assert stall["kind"] == "stall" and "progress_stalled" in stall["alerts"]
    assert restart["kind"] == "restart" and restart["start"] == pytest.approx(stall["end"])
    assert page_seconds(api, "stalled") == pytest.approx(lost["stalled"], abs=M)
    assert page_seconds(api, "restarting") == pytest.approx(lost["restarting"], abs=M)
    assert page_seconds(api, "startup") == pytest.approx(lost["startup"], abs=M)

    body = api.get("/api/report", params={"since": "2h"}).json()
    (run,) = [r for r in body["runs"] if r["run"] == RUN]
    assert run["hours"]["stalled"] * 3600 == pytest.approx(lost["stalled"], abs=M)
    assert run["hours"]["restarting"] * 3600 == pytest.approx(lost["restarting"], abs=M)
    assert run["hours"]["startup"] * 3600 == pytest.approx(lost["startup"], abs=M)
    top = body["costliest"][0]
    assert top["kind"] == "stall" and top["lost_hours"] * 60 == pytest.approx(40, abs=1), body["costliest"]
    assert "progress_stalled" in top["rules"]
    md = api.get("/api/report", params={"since": "2h", "format": "md"}).text
    assert "stall" in md.lower()


def test_the_buckets_add_up_to_wall_clock_times_gpus_for_every_run_and_period(hang):
    service, clock, api = hang
    tick(service, clock, 100 * M, every=60)
    for params in ({"since": "2h"}, {"since": "1h"}, {"since": "30m"}, {"since": "45m"}):
        body = api.get("/api/report", params=params).json()
        assert body["runs"], params
        for run in body["runs"]:
            hours = run["hours"]
            assert sum(hours.values()) == pytest.approx(run["watched_hours"], abs=1e-3), (params, run)
            assert run["gpus"] == GPUS
            for bucket, h in hours.items():
                assert run["gpu_hours"][bucket] == pytest.approx(h * GPUS, abs=1e-3), (params, bucket)
        totals = body["totals"]
        assert sum(totals.values()) == pytest.approx(sum(r["watched_hours"] for r in body["runs"]), abs=1e-3)


RL_CONFIG = """
watch:
  - name: rl-a
    poll_interval: 60s
    sim: {run: grpo, trains: rl, seed: 5, step_time: 30s}
rules:
  packs: [hero, rl]
"""


def test_an_rl_runs_report_picture_draws_its_reward(db_url):
    clock = ManualClock(1_780_000_200.0)
    service = build(db_url, clock, RL_CONFIG)
    tick(service, clock, 40 * M, every=60)
    html = client(service).get("/api/report", params={"since": "1h", "format": "html"}).text
    assert "grpo: reward, incidents shaded" in html, html[-3000:]
    assert "no reward logged" not in html and "no loss logged" not in html
    service.stop()
    service.db.dispose()


def test_an_rl_runs_reward_collapse_is_marked_on_its_report_picture(db_url):
    """A policy collapse costs no GPU-hours (the run keeps stepping), so it is no goodput incident; its
    pages still mark it on the reward chart, from the first symptom to the resolution."""
    clock = ManualClock(1_780_000_200.0)
    cfg = RL_CONFIG.replace(
        "step_time: 30s}", "step_time: 30s, incidents: [{kind: reward_collapse, at: 1h, duration: 1h}]}"
    )
    service = build(db_url, clock, cfg)
    tick(service, clock, 3 * 3600, every=60)
    api = client(service)
    body = api.get("/api/report", params={"since": "4h"}).json()
    [paged] = [p for p in body["paged"] if "rl_reward_collapse" in p["rules"]]
    html = api.get("/api/report", params={"since": "4h", "format": "html"}).text
    service.stop()
    service.db.dispose()
    chart = next(
        m for m in re.findall(r"<svg .*?</svg>", html, re.S) if "grpo: reward, incidents shaded" in m
    )
    assert "pages dashed" in chart
    bands = re.findall(
        r'<rect class="paged" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"[^>]*>'
        r"<title>paged: ([^<]*)</title>",
        chart,
    )
    assert any("rl_reward_collapse" in rules for _, _, rules in bands), bands
    # the band starts at the collapse's onset (an hour into the run) and ends at its resolution
    x, width, _ = next(b for b in bands if "rl_reward_collapse" in b[2])
    t0, t1 = body["period"]["start"], body["period"]["end"]
    onset = 70 + 810 * (paged["start"] - t0) / (t1 - t0)
    assert paged["start"] - 1_780_000_200.0 == pytest.approx(3600, abs=300), paged
    assert float(x) == pytest.approx(onset, abs=1) and float(width) > 100, (bands, paged)
