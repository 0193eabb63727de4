"""Goodput booked by what the run shows of each pause: checkpoint saves, evaluations, start-up and restore,
other pauses, in the tracker, the API, the run page and the report; state stored before these buckets
existed still loads."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from alerts.clock import ManualClock
from monitor.reports.model import Hours
from monitor.runs.goodput import BUCKETS, Goodput
from monitor.runs.goodput_pauses import marks_of
from monitor.runs.run_stats import RunStats
from tests.dashboard.support import build, client
from tests.helpers import page_seconds, sim_id, tick

M = 60.0


def total(r: dict) -> float:
    return r["productive_seconds"] + sum(r["lost_seconds"].values())


def run_steps(
    rs: RunStats, t: float, first: int, last: int, pauses: dict[int, float], logs: dict[int, dict]
) -> float:
    """Steps ``first``..``last`` every 10 s; ``pauses[s]``: seconds the run pauses after step s;
    ``logs[s]``: further metrics step s logs. Returns the time of the last step."""
    for s in range(first, last + 1):
        rs.observe(t, s, {"train/loss": 2.0, **logs.get(s, {})}, state="running")
        if s < last:
            t += 10.0 + pauses.get(s, 0.0)
    return t


def test_saves_on_a_cadence_and_evals_that_log_metrics_are_booked_apart():
    rs = RunStats()
    saves = {s: 60.0 for s in range(50, 1000, 50)}  # a save every 50 steps, nothing logged of it
    evals = {s: 90.0 for s in range(130, 1000, 200)}  # an eval every 200 steps, logging eval/loss
    logs = {s: {"eval/loss": 2.1} for s in evals}
    end = run_steps(rs, 0.0, 1, 999, {**saves, **evals}, logs)
    r = rs.goodput.report(end)
    lost = r["lost_seconds"]
    assert lost["evaluation"] == pytest.approx(5 * 90.0), "each eval step logged eval/loss"
    assert lost["checkpoint"] == pytest.approx((len(saves) - 2) * 60.0), "once the cadence is learned"
    assert lost["paused"] == pytest.approx(2 * 60.0), "the first two saves, before the cadence was known"
    assert lost["stalled"] == lost["restarting"] == lost["startup"] == 0.0
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_a_pause_on_the_save_cadence_that_also_evaluates_is_split():
    rs = RunStats()
    saves = {s: 60.0 for s in range(100, 1000, 100)}
    saves[500] = 150.0  # a save and an eval after step 500
    end = run_steps(rs, 0.0, 1, 999, saves, {500: {"val_loss": 2.1}})
    lost = rs.goodput.report(end)["lost_seconds"]
    assert lost["evaluation"] == pytest.approx(90.0)
    assert lost["checkpoint"] == pytest.approx(6 * 60.0 + 60.0)  # saves 300..900 and the save at 500
    assert lost["paused"] == pytest.approx(2 * 60.0)


def test_a_logged_checkpoint_marker_books_the_first_save_too():
    rs = RunStats()
    end = run_steps(rs, 0.0, 1, 120, {60: 45.0, 90: 60.0}, {60: {"checkpoint/save_seconds": 44.0}})
    lost = rs.goodput.report(end)["lost_seconds"]
    assert lost["checkpoint"] == pytest.approx(45.0)
    assert lost["paused"] == pytest.approx(60.0), "a pause the run shows nothing of is unexplained"


def test_what_a_row_marks():
    assert marks_of(["train/loss", "eval/loss"]) == {"evaluation"}
    assert marks_of(["validation_metrics/loss", "train/loss"]) == {"evaluation"}
    assert marks_of(["timers/save-checkpoint"]) == {"checkpoint"}
    assert marks_of(["train/loss", "throughput/mfu", "optim/learning_rate", "value/loss"]) == frozenset()


def test_a_restart_is_restarting_up_to_the_new_process_then_start_up():
    g = Goodput()
    for s in range(1, 101):
        g.observe(s * 10.0, s, "running")
    g.observe(1010.0, None, "crashed")
    g.observe(1300.0, None, "running")  # seen running again
    g.observe(1700.0, 91, "running", started=1400.0)  # the new process started at 1400, restored to 91
    r = g.report(1700.0)
    lost = r["lost_seconds"]
    assert lost["down"] == pytest.approx(300.0)
    assert lost["restarting"] == pytest.approx(100.0) and lost["startup"] == pytest.approx(290.0)
    assert lost["rework"] == pytest.approx(100.0)
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_state_stored_before_the_new_buckets_loads_and_goes_on():
    old = {  # runs.stats["goodput"] as stored before checkpoint/evaluation/startup existed
        "v": 1,
        "start": 0.0,
        "acct": 1000.0,
        "mode": "running",
        "since": None,
        "ended_at": None,
        "last_step": 100,
        "last_step_t": 1000.0,
        "intervals": [10.0] * 20,
        "totals": {
            "productive": 700.0,
            "paused": 100.0,
            "stalled": 0.0,
            "restarting": 200.0,
            "down": 0.0,
            "rework": 0.0,
        },
        "incidents": [],
        "counts": {"startup": 1},
        "steps_redone": 0,
    }
    g = Goodput.from_dict(json.loads(json.dumps(old)))
    r = g.report(1000.0)
    assert set(r["lost_seconds"]) == set(BUCKETS[1:])
    assert r["lost_seconds"]["restarting"] == 200.0 and r["lost_seconds"]["checkpoint"] == 0.0
    assert r["wall_seconds"] == pytest.approx(1000.0)
    g.observe(1010.0, 101, "running", keys=["eval/loss"])
    g.observe(1080.0, 102, "running")  # a 60 s pause after the eval step
    r = g.report(1080.0)
    assert r["lost_seconds"]["evaluation"] == pytest.approx(60.0)
    assert total(r) == pytest.approx(r["wall_seconds"]) == pytest.approx(1080.0)
    again = Goodput.from_dict(json.loads(json.dumps(g.to_dict())))
    assert again.report(1080.0) == r


GPUS = 4
RUN = sim_id("hero-ce")
CONFIG = f"""
watch:
  - name: hero-ce
    poll_interval: 60s
    gpus: {GPUS}
    sim:
      seed: 4
      step_time: 10s
      checkpoint_every: 20
      checkpoint_pause: 60s
      eval_every: 50
      eval_pause: 90s
      restore_time: 2m
      incidents:
        - {{kind: restart, at: 100m}}
"""


def test_saves_evals_and_restore_in_the_api_the_run_page_and_the_report(db_url):
    clock = ManualClock(1_780_000_200.0)
    service = build(db_url, clock, CONFIG)
    api = client(service)
    try:
        tick(service, clock, 150 * M, every=60)
        g = api.get(f"/api/runs/{quote(RUN, safe='')}").json()["goodput"]
        lost = g["lost_seconds"]
        assert lost["checkpoint"] > 10 * M and lost["evaluation"] > 10 * M, lost
        assert lost["startup"] >= 2 * M, "the restore after the restart"
        assert lost["checkpoint"] > 4 * lost["paused"], lost
        html = api.get("/runs/" + quote(RUN, safe="")).text
        for bucket in ("checkpoint", "evaluation", "startup"):
            assert page_seconds(html, bucket) == pytest.approx(lost[bucket], abs=M), bucket
        assert "Checkpoint saves" in html and "Evaluation" in html

        for since in ("3h", "1h", "45m"):
            body = api.get("/api/report", params={"since": since}).json()
            (run,) = [r for r in body["runs"] if r["run"] == RUN]
            hours = run["hours"]
            assert sum(hours.values()) == pytest.approx(run["watched_hours"], abs=1e-3), since
            for bucket, h in hours.items():
                assert run["gpu_hours"][bucket] == pytest.approx(h * GPUS, abs=1e-3), (since, bucket)
        body = api.get("/api/report", params={"since": "3h"}).json()
        (run,) = [r for r in body["runs"] if r["run"] == RUN]
        for bucket in ("checkpoint", "evaluation", "startup"):
            assert run["hours"][bucket] * 3600 == pytest.approx(lost[bucket], abs=M), bucket
        md = api.get("/api/report", params={"since": "3h", "format": "md"}).text
        header = next(line for line in md.splitlines() if line.startswith("| run | watched"))
        assert "checkpoint saves" in header and "evaluation" in header and "start-up & restore" in header
        assert "| down |" not in header, "a bucket with no time in the period is not a column"
        page = api.get("/api/report", params={"since": "3h", "format": "html"}).text
        assert "checkpoint saves" in page and "evaluation" in page
    finally:
        service.stop()
        service.db.dispose()


def test_a_report_stored_before_the_new_buckets_reads_them_as_zero():
    old = {"productive": 10.0, "paused": 1.0, "stalled": 2.0, "restarting": 0.5, "down": 0.0, "rework": 0.5}
    h = Hours.model_validate(old)
    assert h.total() == pytest.approx(14.0) and h.ratio() == pytest.approx(10 / 14)
    assert h.checkpoint == h.evaluation == h.startup == 0.0
