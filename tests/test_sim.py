"""The simulated hero run: realistic when healthy, and each incident does what it says."""

from __future__ import annotations

import math
import statistics

from monitor.sources.base import Target
from monitor.sources.sim import SimRun, SimSource
from monitor.sources.sim_config import SimTarget

HOUR = 3600.0
T_PAST = 1_779_667_200.0  # a Monday 00:00 UTC


def sim(**kw) -> SimRun:
    return SimRun(SimTarget(**kw), "r", origin=0.0)


def gaps(rows):
    return [b.t - a.t for a, b in zip(rows, rows[1:], strict=False)]


def test_a_healthy_run_steps_steadily_and_its_loss_falls():
    rows = sim(
        step_time=10, checkpoint_every=100, checkpoint_pause=60, eval_every=300, eval_pause=30
    ).advance(4 * HOUR)
    assert 1300 < len(rows) < 1440
    assert [r.step for r in rows] == list(range(1, len(rows) + 1))
    g = gaps(rows)
    assert 9.5 < statistics.median(g) < 10.5
    assert max(g) > 60, "checkpoint saves pause the run"
    first, last = rows[0].metrics["train/loss"], rows[-1].metrics["train/loss"]
    assert last < first * 0.6
    assert all(math.isfinite(r.metrics["train/loss"]) for r in rows)
    assert any("eval/loss" in r.metrics for r in rows)
    tps = [r.metrics["throughput/tokens_per_second"] for r in rows]
    assert statistics.pstdev(tps) / statistics.mean(tps) < 0.1


def test_the_same_seed_gives_the_same_run_and_resuming_in_pieces_changes_nothing():
    whole = sim(seed=5).advance(HOUR)
    pieces = sim(seed=5)
    parts = [r for t in range(300, 3601, 300) for r in pieces.advance(float(t))]
    assert [(r.step, r.t, r.metrics["train/loss"]) for r in whole] == [
        (r.step, r.t, r.metrics["train/loss"]) for r in parts
    ]


def test_stall_holds_the_step_counter():
    rows = sim(incidents=[{"kind": "stall", "at": "1h", "duration": "40m"}]).advance(3 * HOUR)
    longest = max(gaps(rows))
    assert 40 * 60 <= longest < 42 * 60


def test_restart_rewinds_to_the_last_checkpoint_after_the_restore():
    s = sim(checkpoint_every=100, restore_time=300, incidents=[{"kind": "restart", "at": "1h"}])
    rows = s.advance(2 * HOUR)
    rewind = next(i for i, (a, b) in enumerate(zip(rows, rows[1:], strict=False)) if b.step <= a.step)
    assert rows[rewind + 1].step == 301, "resumed from checkpoint 300"
    assert rows[rewind + 1].t - HOUR >= 300, "after the restore time"
    assert s.restarts == 1


def test_loss_spike_nan_throughput_drop_oom_and_crash():
    s = sim(
        incidents=[
            {"kind": "loss_spike", "at": "30m", "magnitude": 2.0},
            {"kind": "nan", "at": "50m"},
            {"kind": "throughput_drop", "at": "1h", "factor": 0.8},
            {"kind": "oom_kill", "at": "70m", "count": 2},
            {"kind": "crash", "at": "2h"},
        ]
    )
    rows = s.advance(3 * HOUR)
    losses = [r.metrics["train/loss"] for r in rows]
    spike = next(i for i, r in enumerate(rows) if r.t >= 1800)
    assert losses[spike] > 2.5 * losses[spike - 1] and losses[spike + 1] < 1.2 * losses[spike - 1]
    nans = [r.step for r in rows if math.isnan(r.metrics["train/loss"])]
    assert len(nans) == 1
    before = [r.metrics["throughput/tokens_per_second"] for r in rows if 2400 < r.t < 3600]
    after = [r.metrics["throughput/tokens_per_second"] for r in rows if r.t > 3700]
    assert 0.75 < statistics.mean(after) / statistics.mean(before) < 0.85
    assert s.oom_kills(69 * 60) == 0 and s.oom_kills(71 * 60) == 2
    assert s.state == "crashed" and rows[-1].t < 2 * HOUR


def test_the_source_reports_state_counters_and_a_resumable_cursor():
    src = SimSource()
    target = Target("w", SimTarget(run="hero", incidents=[{"kind": "oom_kill", "at": "10m"}]), {"team": "x"})
    res = src.poll(target, {}, 1000.0)
    info = res.runs[0]
    assert res.error is None and info.run == "sim:w/hero" and info.labels["team"] == "x"
    assert (info.name, info.project, info.display_name) == ("hero", "w", "hero")  # keyed by watch and run
    assert src.poll(target, {}, 1000.0 + 1200).samples[-1].metrics["oom_kills_total"] == 1.0
    cursor = res.cursors["sim:w/hero"]
    fresh = SimSource()  # herowatch restarted: the sim resumes from the cursor, nothing is read twice
    rows = fresh.poll(target, {"sim:w/hero": cursor}, 1000.0 + 600).samples
    stepped = [r for r in rows if r.step is not None]
    assert stepped and stepped[0].t > cursor["t"]


def test_incidents_repeat_every_loop_when_asked():
    s = sim(
        checkpoint_every=100,
        restore_time=120,
        repeat_every="2h",
        incidents=[
            {"kind": "stall", "at": "10m", "duration": "30m"},
            {"kind": "oom_kill", "at": "1h", "count": 2},
            {"kind": "restart", "at": "1h"},
            {"kind": "loss_spike", "at": "1h30m"},
        ],
    )
    rows = s.advance(6 * HOUR)
    long_gaps = [(a.t, b.t - a.t) for a, b in zip(rows, rows[1:], strict=False) if b.t - a.t > 25 * 60]
    assert [round(t / HOUR) for t, _ in long_gaps] == [0, 2, 4], "a stall in each of the three loops"
    rewinds = [b.t for a, b in zip(rows, rows[1:], strict=False) if b.step <= a.step]
    assert len(rewinds) == 3 and s.restarts == 3
    assert s.oom_kills(6 * HOUR) == 6 and s.oom_kills(HOUR + 1) == 2 and s.oom_kills(3 * HOUR + 1) == 4
    losses = [r.metrics["train/loss"] for r in rows]
    jumps = [i for i in range(1, len(losses)) if losses[i] > 1.6 * losses[i - 1]]
    assert len(jumps) == 3, "the one-step spike happens once per loop"


def test_an_outage_makes_the_source_unreadable_then_delivers_the_missed_steps():
    target = Target(
        "w", SimTarget(run="hero", incidents=[{"kind": "outage", "at": "10m", "duration": "20m"}])
    )
    src = SimSource()
    src.poll(target, {}, 0.0)  # the run starts at the first poll
    before = src.poll(target, {}, 9 * 60.0)
    assert before.error is None and before.samples
    cursors = before.cursors
    during = src.poll(target, cursors, 20 * 60.0)
    assert during.error and "outage" in during.error and during.samples == [] and during.cursors == {}
    after = src.poll(target, cursors, 31 * 60.0)
    steps = [s.step for s in after.samples if s.step is not None]
    assert after.error is None and min(t.t for t in after.samples) < 20 * 60, "history of the outage arrives"
    assert steps == list(range(steps[0], steps[-1] + 1))


def test_a_loop_that_cannot_repeat_is_refused():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="must be over before the loop restarts"):
        SimTarget(repeat_every="1h", incidents=[{"kind": "stall", "at": "50m", "duration": "20m"}])
    with pytest.raises(ValidationError, match="a crash ends the run"):
        SimTarget(repeat_every="1h", incidents=[{"kind": "crash", "at": "50m"}])


def test_a_run_told_to_finish_logs_up_to_then_and_ends():
    run = sim(step_time=10, finish_after=HOUR)
    rows = run.advance(2 * HOUR)
    assert run.state == "finished" and rows and rows[-1].t < HOUR <= rows[-1].t + 11
    assert run.advance(3 * HOUR) == [] and run.state == "finished"


def test_the_demos_past_week_ends_with_its_runs_finished_and_nothing_left_firing(tmp_path):
    """Last week's attempts (``/reports``) are over: finished runs with no alert firing on the dashboard."""
    from importlib import resources

    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from monitor.cli import demo_history
    from monitor.config.loader import parse_config
    from monitor.reports.period import make, zone
    from monitor.settings import Settings
    from monitor.storage.models import Alert, Run

    text = resources.files("monitor.config").joinpath("demo.yaml").read_text(encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'past.db'}"
    saved = demo_history.PAUSE
    demo_history.PAUSE = 0.0
    try:
        ends = T_PAST + 7 * HOUR + 50 * 60  # in the second loop's throughput drop, its alert firing
        half_a_day = make(T_PAST, ends, zone("UTC"))
        demo_history.play(parse_config(text, "demo.yaml"), Settings(database_url=db), period=half_a_day)
    finally:
        demo_history.PAUSE = saved
    engine = create_engine(db)
    with Session(engine) as s:
        states = {r.display_name: r.state for r in s.scalars(select(Run))}
        open_alerts = [(a.rule, a.run_id) for a in s.scalars(select(Alert).where(Alert.state != "resolved"))]
    engine.dispose()
    assert states and set(states.values()) == {"finished"}, states
    assert open_alerts == [], f"the past left alerts open: {open_alerts}"
