"""The detector kinds other than stall and spike, each fed samples with injected times."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from monitor.rules.kinds import DETECTORS
from monitor.samples import Sample
from tests.rules.helpers_rules import T0, feed, rule, steps

MIN = 60.0


def det(**raw: object):
    spec = rule(**raw)
    return DETECTORS[spec.kind](spec, "r")


def prom(metric: str, values: list[float], every: float = MIN) -> list[Sample]:
    return [Sample(T0 + i * every, "r", metrics={metric: v}) for i, v in enumerate(values)]


def test_registry_has_every_kind():
    assert set(DETECTORS) == {
        "stall",
        "telemetry_gone",
        "non_finite",
        "spike",
        "threshold",
        "drop",
        "flatline",
        "counter_increase",
        "restarts",
        "state",
        "regression",
        "absent",
        "slowdown",
        "trend",
        "ended",
        "straggler",
        "job_alert",
    }


# ---- telemetry_gone ---------------------------------------------------------------------------
def test_telemetry_gone_counts_only_data_not_state_reports():
    d = det(kind="telemetry_gone", after="10m", while_stepping=True)
    feed(d, steps([2.0] * 5, every=MIN))
    feed(d, [Sample(T0 + i * MIN, "r", state="running") for i in range(5, 30)])
    assert not d.evaluate(T0 + 4 * MIN + 9 * MIN).active
    assert d.evaluate(T0 + 4 * MIN + 11 * MIN).active
    assert d.wake_at == T0 + 4 * MIN + 10 * MIN


def test_telemetry_gone_leaves_a_stepping_run_to_the_stall_rule_and_watches_one_without_steps():
    """A run with a step clock that goes quiet is one hang, paged once by progress_stalled with its
    learned pauses; a run that only sends metrics (no step) is this rule's."""
    stepping = det(kind="telemetry_gone", after="10m")
    feed(stepping, steps([2.0] * 5, every=MIN))
    assert not stepping.evaluate(T0 + 3600).active and stepping.wake_at == math.inf
    assert "stall rule" in stepping.evaluate(T0 + 3600).reason
    metrics_only = det(kind="telemetry_gone", after="10m")
    feed(metrics_only, prom("gpu_sm_active_ratio", [0.9] * 5) + [Sample(T0 + 20 * MIN, "r", state="running")])
    assert metrics_only.evaluate(T0 + 4 * MIN + 11 * MIN).active


def test_telemetry_gone_holds_off_when_finished_or_unreadable():
    d = det(kind="telemetry_gone", after="10m")
    feed(d, steps([2.0] * 5, every=MIN) + [Sample(T0 + 5 * MIN, "r", state="finished")])
    assert not d.evaluate(T0 + 3600).active
    d = det(kind="telemetry_gone", after="10m")
    feed(d, steps([2.0] * 5, every=MIN) + [Sample(T0 + 5 * MIN, "r", source_error="timeout")])
    assert not d.evaluate(T0 + 3600).active


# ---- non_finite --------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_fires_at_once_and_clears_on_a_finite_value(bad):
    d = det(kind="non_finite", metric="train/loss", severity="critical")
    feed(d, steps([2.0, 2.0, bad]))
    f = d.evaluate(T0 + 20)
    assert f.active and f.step == 2
    feed(d, steps([2.0], t0=T0 + 30, start_step=3))
    assert not d.evaluate(T0 + 30).active and d.stats() == {"non_finite": 1}


def test_non_finite_refuses_a_for():
    with pytest.raises(ValidationError, match="fires at once"):
        rule(kind="non_finite", metric="train/loss", **{"for": "1m"})


# ---- threshold ---------------------------------------------------------------------------------
def test_threshold_without_a_bound_is_off():
    d = det(kind="threshold", metric="throughput/tokens_per_second", mode="fraction")
    assert d.inputs() == frozenset()
    feed(d, steps([0.0] * 100, metric="throughput/tokens_per_second"))
    f = d.evaluate(T0 + 1000)
    assert not f.active and "off" in f.reason


def test_threshold_latest_above_and_below():
    d = det(kind="threshold", metric="m", above=2.0)
    feed(d, steps([1.0, 2.5], metric="m"))
    assert d.evaluate(T0 + 10).active
    feed(d, steps([1.5], metric="m", t0=T0 + 20, start_step=2))
    assert not d.evaluate(T0 + 20).active
    d = det(kind="threshold", metric="m", below=1.0)
    feed(d, steps([0.5], metric="m"))
    assert d.evaluate(T0).active


def test_threshold_fraction_ignores_one_zero_after_a_restart():
    d = det(
        kind="threshold",
        metric="throughput/mfu",
        below=15,
        mode="fraction",
        fraction=0.5,
        window="15m",
        min_samples=10,
    )
    feed(d, steps([40.0] * 60 + [0.0] + [40.0] * 60, metric="throughput/mfu"))
    assert not d.hot
    d = det(
        kind="threshold",
        metric="throughput/mfu",
        below=15,
        mode="fraction",
        fraction=0.5,
        window="15m",
        min_samples=10,
    )
    feed(d, steps([40.0] * 30 + [9.0] * 90, metric="throughput/mfu"))
    f = d.evaluate(T0 + 1190)
    assert f.active and "below 15 in" in f.reason


def test_threshold_mean_and_min_samples_and_after_step():
    d = det(kind="threshold", metric="m", above=0.07, mode="mean", window="10m", min_samples=5)
    feed(d, steps([0.1] * 4, metric="m", every=MIN))
    assert not d.hot  # four samples are too few
    feed(d, steps([0.1] * 4, metric="m", every=MIN, t0=T0 + 4 * MIN, start_step=4))
    assert d.hot
    d = det(kind="threshold", metric="m", above=2.0, after_step=1000)
    feed(d, steps([5.0] * 20, metric="m"))
    assert not d.hot and d.last is None


def test_threshold_lapses_when_the_data_is_stale():
    d = det(kind="threshold", metric="m", above=2.0, stale_after="30m")
    feed(d, steps([5.0], metric="m"))
    assert d.evaluate(T0 + 29 * MIN).active
    f = d.evaluate(T0 + 31 * MIN)
    assert not f.active and "no m for" in f.reason


def test_threshold_bounds_that_always_fire_are_refused():
    with pytest.raises(ValidationError, match="always fire"):
        rule(kind="threshold", metric="m", above=1.0, below=2.0)


# ---- drop --------------------------------------------------------------------------------------
def tps(values: list[float], every: float = 10.0, t0: float = T0, start_step: int = 0) -> list[Sample]:
    return steps(values, metric="throughput/tokens_per_second", every=every, t0=t0, start_step=start_step)


def test_drop_fires_on_a_sustained_relative_drop_and_not_on_a_wobble():
    d = det(kind="drop", metric="throughput/tokens_per_second", drop=0.1)
    feed(d, tps([400.0] * 180 + [330.0] * 60))
    f = d.evaluate(T0 + 2400)
    assert f.active and "-18%" in f.reason
    d = det(kind="drop", metric="throughput/tokens_per_second", drop=0.1)
    feed(d, tps([400.0] * 180 + [380.0] * 60))
    assert not d.hot


def test_drop_baseline_resets_on_a_rewind_and_freezes_while_dropped():
    d = det(kind="drop", metric="throughput/tokens_per_second", drop=0.1)
    feed(d, tps([400.0] * 180 + [300.0] * 600))  # 100 minutes slow: still an alert, not the new normal
    assert d.hot and d.stats()["baseline"] == 400.0
    feed(d, tps([300.0] * 10, t0=T0 + 7900, start_step=100))  # restarted from step 100: new baseline
    assert d.resets == 1 and not d.hot and len(d.base) == 0


def test_drop_one_terrible_step_moves_nothing():
    d = det(kind="drop", metric="throughput/tokens_per_second", drop=0.1)
    feed(d, tps([400.0] * 180 + [1.0] + [400.0] * 60))
    assert not d.hot


# ---- counter_increase ------------------------------------------------------------------------
def test_counter_increase_handles_resets_and_ignores_the_starting_value():
    d = det(kind="counter_increase", metric="oom_kills_total", increase=2, window="6h")
    feed(d, prom("oom_kills_total", [3.0, 3.0, 4.0]))
    assert not d.hot  # 3 old kills do not count; one new one is not two
    feed(d, [Sample(T0 + 10 * MIN, "r", metrics={"oom_kills_total": 1.0})])  # exporter restarted: reset
    assert d.hot and d.resets == 1
    assert not d.evaluate(T0 + 7 * 3600).active  # both increases left the 6h window


def test_counter_increase_of_per_step_counts():
    d = det(kind="counter_increase", metric="optim/skipped_step", increase=3, window="15m", cumulative=False)
    feed(d, steps([0, 1, 0, 1, 0, 0], metric="optim/skipped_step"))
    assert not d.hot
    feed(d, steps([1], metric="optim/skipped_step", t0=T0 + 60, start_step=6))
    assert d.evaluate(T0 + 60).active


# ---- restarts -----------------------------------------------------------------------------------
def test_restarts_from_rewinds_resumes_and_a_counter_counted_once_each():
    d = det(kind="restarts", min_restarts=1, window="1h")
    feed(d, steps([2.0] * 10))
    feed(
        d,
        [
            Sample(T0 + 100, "r", metrics={"restarts_total": 0.0}),
            Sample(T0 + 200, "r", metrics={"restarts_total": 1.0}),
        ],
    )  # the process restarted ...
    feed(d, steps([2.0] * 5, t0=T0 + 500, start_step=5))  # ... and its first step is a rewind: same one
    assert d.stats() == {"restarts": 1}
    feed(d, [Sample(T0 + 600, "r", state="crashed"), Sample(T0 + 700, "r", state="running")])
    assert d.stats() == {"restarts": 2}
    assert d.evaluate(T0 + 700).active and not d.evaluate(T0 + 700 + 3601).active


def test_crash_loop_needs_restarts_without_progress():
    loop = det(kind="restarts", min_restarts=3, window="2h", no_progress=True, severity="critical")
    moving = det(kind="restarts", min_restarts=3, window="2h", no_progress=True, severity="critical")
    feed(loop, steps([2.0] * 21))  # steps 0..20
    t = 300.0
    for _ in range(3):  # back to the step-10 checkpoint each time, never past step 20 again
        feed(loop, steps([2.0] * 6, t0=T0 + t, start_step=10))
        t += 200
    assert loop.hot and "stuck below step 20" in loop.evaluate(T0 + t).reason
    t = 0.0
    for first in (0, 10, 20, 30):  # each restart gets further than before
        feed(moving, steps([2.0] * 15, t0=T0 + t, start_step=first))
        t += 200
    assert not moving.hot and moving.stats() == {"restarts": 3}


# ---- state ----------------------------------------------------------------------------------------
def test_state_crashed_pages_finished_never():
    d = det(kind="state", severity="critical")
    feed(d, [Sample(T0, "r", 5, state="running"), Sample(T0 + 60, "r", state="crashed")])
    f = d.evaluate(T0 + 60)
    assert f.active and f.reason == "run is crashed at step 5"
    feed(d, [Sample(T0 + 120, "r", state="running")])
    assert not d.evaluate(T0 + 120).active
    d = det(kind="state", severity="critical")
    feed(d, [Sample(T0, "r", state="finished")])
    assert not d.evaluate(T0).active
    with pytest.raises(ValidationError, match="never pages"):
        rule(kind="state", states=["finished"], severity="critical")
    rule(kind="state", states=["finished"], severity="info")


# ---- regression --------------------------------------------------------------------------------
def test_regression_compares_the_newest_eval_with_the_previous_one():
    d = det(kind="regression", metric="eval/loss", delta=0.01)
    feed(d, [Sample(T0, "r", 1000, {"eval/loss": 3.0}), Sample(T0 + 1, "r", 1000, {"eval/loss": 3.0})])
    assert not d.hot  # the same eval logged twice
    feed(d, [Sample(T0 + 60, "r", 2000, {"eval/loss": 3.005})])
    assert not d.hot  # within delta
    feed(d, [Sample(T0 + 120, "r", 3000, {"eval/loss": 3.1})])
    f = d.evaluate(T0 + 120)
    assert f.active and "regressed to 3.1 at step 3000 from 3.005 at step 2000" in f.reason
    feed(d, [Sample(T0 + 180, "r", 4000, {"eval/loss": 3.0})])
    assert not d.hot
    acc = det(kind="regression", metric="eval/acc", delta=0.05, relative=True, higher_is_worse=False)
    feed(acc, [Sample(T0, "r", 1, {"eval/acc": 0.8}), Sample(T0 + 1, "r", 2, {"eval/acc": 0.7})])
    assert acc.hot


# ---- absent -------------------------------------------------------------------------------------
def test_absent_fires_when_the_metric_stops_while_steps_go_on():
    d = det(kind="absent", metric="train/loss", after="30m")
    feed(d, steps([2.0] * 10, every=MIN))
    feed(d, steps([1.0] * 50, metric="throughput/duration", every=MIN, t0=T0 + 10 * MIN, start_step=10))
    assert d.wake_at == T0 + 9 * MIN + 30 * MIN
    assert not d.evaluate(T0 + 38 * MIN).active and d.evaluate(T0 + 40 * MIN).active


def test_absent_during_a_hang_is_no_logging_fault_even_with_rows_at_the_last_step():
    """A hung run whose evaluation logs one more row at the step it stopped on: no step arrived, so
    the loss is not missing "while steps kept arriving" (the hang is progress_stalled's page)."""
    d = det(kind="absent", metric="train/loss", after="30m")
    feed(d, steps([2.0] * 10, every=MIN))
    feed(d, [Sample(T0 + 12 * MIN, "r", 9, {"eval/loss": 2.1}, "running")])
    feed(d, [Sample(T0 + k * MIN, "r", state="running") for k in range(13, 90)])
    f = d.evaluate(T0 + 90 * MIN)
    assert not f.active and "kept arriving" not in f.reason


def test_absent_leaves_total_silence_to_the_other_rules():
    d = det(kind="absent", metric="train/loss", after="30m")
    feed(d, steps([2.0] * 10, every=MIN))
    f = d.evaluate(T0 + 3 * 3600)
    assert not f.active and "no steps either" in f.reason
