"""Time to detect is real: each rule kind that can say when its evidence began reports it with its alert
(``Finding.onset``), and it is the start of the trouble, not the moment the rule made up its mind.
The report measures detect time from it (tests/reports/test_detect_times.py)."""

from __future__ import annotations

import random

import pytest

from monitor.rules.kinds import DETECTORS
from monitor.rules.loader import load_pack
from monitor.rules.straggler import derived_metric
from monitor.samples import ALERT_METRIC, JobAlert, Sample
from monitor.traces.replay import replay
from tests.rules import rl_curves as rc
from tests.rules.helpers_rules import T0, feed, rule, steps


def first_firing(samples, pack: str, rule: str):
    events = [e for e in replay(samples, load_pack(pack)).firing() if e.rule == rule]
    assert events, rule
    return events[0]


RL = [
    (rc.collapse, "rl_reward_collapse"),  # spike, floor mode
    (rc.kl_blowup, "rl_kl_blowup"),
    (rc.entropy_collapse, "rl_entropy_collapse"),
    (rc.nan_reward, "rl_reward_nonfinite"),  # non_finite
]


@pytest.mark.parametrize("change, rule", RL, ids=[r for _, r in RL])
def test_the_rl_rules_report_when_the_trouble_began(change, rule):
    seed = 1
    shape = rc.Shape.draw(random.Random(seed))
    n = int(6 * 3600 / shape.step_seconds)
    start = n * 2 // 3
    began = rc.T0 + start * shape.step_seconds
    fired = first_firing(rc.run(seed, n, rc.from_step(start, change)), "rl", rule)
    assert fired.onset is not None, rule
    assert began - 2 * shape.step_seconds <= fired.onset <= began + 5 * 60, (fired.onset - began, rule)
    assert fired.onset <= fired.t


def test_a_collapse_judged_over_a_window_is_detected_that_window_after_it_began():
    """The issue's case: the reward fell at 05:52 and the rule fired later; the time to detect is
    measured from where the fall began (the first of the values in a row it judged: ``floor_steps: 3``
    in the rl pack), never 0 s."""
    seed = 2
    shape = rc.Shape.draw(random.Random(seed))
    n = int(6 * 3600 / shape.step_seconds)
    start = n * 2 // 3
    fired = first_firing(rc.run(seed, n, rc.from_step(start, rc.collapse)), "rl", "rl_reward_collapse")
    detect = fired.t - fired.onset
    assert detect >= 2 * shape.step_seconds, "three values in a row: at least two steps after the onset"
    assert detect <= max(5 * shape.step_seconds, 600), "within 5 RL steps or 10 minutes (issue 39)"


def test_a_stall_reports_its_last_step():
    rows = steps([2.0] * 100, every=10.0)
    rows += steps([2.0] * 5, every=10.0, start_step=100, t0=T0 + 990 + 3600)  # no step for an hour
    fired = first_firing(rows, "hero", "progress_stalled")
    assert fired.onset == pytest.approx(T0 + 990) and fired.t - fired.onset >= 10 * 60


# ---- every other rule kind: its onset is when the condition it judged began to hold ------------------
MIN = 60.0


def det(**raw: object):
    spec = rule(**raw)
    return DETECTORS[spec.kind](spec, "r")


def series(
    metric: str, values: list[float], every: float = MIN, t0: float = T0, start: int = 0
) -> list[Sample]:
    return steps(values, metric=metric, every=every, t0=t0, start_step=start)


def fired(d, samples: list[Sample], now: float):
    feed(d, samples)
    f = d.evaluate(now)
    assert f.active, f.reason
    return f


def test_threshold_onset_is_the_first_value_beyond_the_bound():
    d = det(kind="threshold", metric="m", above=2.0)
    f = fired(d, series("m", [1.0] * 10 + [5.0] * 5), T0 + 14 * MIN)
    assert (f.onset, f.onset_step) == (T0 + 10 * MIN, 10)


def test_windowed_threshold_onset_is_the_first_bucket_beyond_the_bound():
    d = det(kind="threshold", metric="m", above=2.0, mode="mean", window="30m", min_samples=5)
    f = fired(d, series("m", [1.0] * 60 + [9.0] * 30), T0 + 89 * MIN)
    assert T0 + 58 * MIN <= f.onset <= T0 + 61 * MIN, (f.onset - T0) / MIN


def test_drop_onset_is_the_first_bucket_of_the_lower_level():
    d = det(kind="drop", metric="tps", drop=0.1)
    f = fired(d, series("tps", [400.0] * 180 + [330.0] * 60, every=10.0), T0 + 2400)
    began = T0 + 1800
    assert began - 60 <= f.onset <= began + 60, f.onset - began


def test_slowdown_onset_is_where_the_step_time_began_to_climb():
    d = det(kind="slowdown")
    times = [i * 1.0 for i in range(9000)] + [9000 + i * 1.1 for i in range(4000)]
    f = fired(d, [Sample(T0 + t, "r", i, {}, "running") for i, t in enumerate(times)], T0 + times[-1])
    assert T0 + 9000 - 300 <= f.onset <= T0 + 9000 + 600, f.onset - T0 - 9000
    assert f.onset_step is not None and 8700 <= f.onset_step <= 9600


def test_regression_onset_is_the_eval_that_came_out_worse():
    d = det(kind="regression", metric="eval/loss", delta=0.01)
    f = fired(
        d,
        [Sample(T0, "r", 1000, {"eval/loss": 3.0}), Sample(T0 + 900, "r", 2000, {"eval/loss": 3.5})],
        T0 + 950,
    )
    assert (f.onset, f.onset_step) == (T0 + 900, 2000)


def test_trend_onset_is_the_start_of_the_window_it_rose_over():
    d = det(kind="trend", metric="m")
    values = [2.0 + 0.002 * max(0, i - 180) for i in range(540)]  # flat for 30 min, then rising
    f = fired(d, series("m", values, every=10.0), T0 + 5390)
    assert T0 <= f.onset < T0 + 5390 - 10 * MIN and f.onset_step is not None
    assert f.onset <= T0 + 5390 - 25 * MIN, "the window it judged, not the last point"


def test_counter_onset_is_the_first_rise_it_counted():
    d = det(kind="counter_increase", metric="oom_kills_total", increase=2, window="6h")
    samples = [
        Sample(T0 + i * MIN, "r", metrics={"oom_kills_total": v}) for i, v in enumerate([3, 3, 4, 4, 5])
    ]
    assert fired(d, samples, T0 + 5 * MIN).onset == T0 + 2 * MIN


def test_restarts_onset_is_the_first_restart_it_counted():
    d = det(kind="restarts", min_restarts=2, window="1h")
    feed(d, steps([2.0] * 10))
    samples = [Sample(T0 + 600, "r", state="crashed"), Sample(T0 + 700, "r", state="running")]
    samples += [Sample(T0 + 900, "r", state="crashed"), Sample(T0 + 1000, "r", state="running")]
    f = fired(d, samples, T0 + 1000)
    assert T0 + 600 <= f.onset <= T0 + 700, f.onset - T0


def test_flatline_onset_is_the_oldest_value_of_its_flat_window():
    d = det(kind="flatline", metric="m", window="30m", baseline="2h")
    rng = random.Random(0)
    moving = [0.5 + rng.gauss(0, 0.03) for _ in range(120)]
    f = fired(d, series("m", moving) + series("m", [0.0] * 40, t0=T0 + 120 * MIN, start=120), T0 + 159 * MIN)
    assert T0 + 120 * MIN <= f.onset <= T0 + 130 * MIN, (f.onset - T0) / MIN


def test_absent_onset_is_the_metrics_last_arrival():
    d = det(kind="absent", metric="eval/loss", after="30m")
    rows = [
        Sample(T0 + i * MIN, "r", i, {"train/loss": 2.0, **({"eval/loss": 3.0} if i < 10 else {})}, "running")
        for i in range(60)
    ]
    assert fired(d, rows, T0 + 59 * MIN).onset == T0 + 9 * MIN


def test_telemetry_gone_onset_is_the_last_data():
    d = det(kind="telemetry_gone", after="10m")  # a run without a step clock (metrics only)
    samples = [Sample(T0 + i * MIN, "r", metrics={"gpu/util": 0.9}) for i in range(5)]
    samples += [Sample(T0 + i * MIN, "r", state="running") for i in range(5, 30)]
    f = fired(d, samples, T0 + 20 * MIN)
    assert f.onset == T0 + 4 * MIN
    d = det(kind="telemetry_gone", after="10m", while_stepping=True)  # and a stepping run, when asked
    samples = steps([2.0] * 5, every=MIN) + [Sample(T0 + i * MIN, "r", state="running") for i in range(5, 30)]
    f = fired(d, samples, T0 + 20 * MIN)
    assert (f.onset, f.onset_step) == (T0 + 4 * MIN, 4)


@pytest.mark.parametrize("kind, raw", [("state", {"states": ["crashed"]}), ("ended", {"grace": "5m"})])
def test_state_and_ended_onset_is_when_the_run_entered_the_state(kind, raw):
    d = det(kind=kind, **raw)
    samples = steps([2.0] * 10, every=MIN) + [Sample(T0 + 12 * MIN, "r", state="crashed")]
    assert fired(d, samples, T0 + 30 * MIN).onset == T0 + 12 * MIN


def test_job_alert_onset_is_when_the_job_raised_it():
    d = det(kind="job_alert", level="error", resolve_after="1h")
    alert = JobAlert("Shard corrupt", "bad", "error")
    sample = Sample(T0 + 300, "r", 7, {ALERT_METRIC: alert.metric()}, source="push", alert=alert)
    f = fired(d, steps([2.0] * 5) + [sample], T0 + 900)
    assert (f.onset, f.onset_step) == (T0 + 300, 7)


def test_straggler_onset_is_when_the_member_first_drifted_past_z():
    d = det(kind="straggler", z=6.0)
    name = derived_metric(d.rule)
    scores = [1.0] * 10 + [8.0, 9.0, 7.0]
    samples = [
        Sample(T0 + i * MIN, "r", metrics={name: v}, labels={"member": "node-3/gpu5"})
        for i, v in enumerate(scores)
    ]
    assert fired(d, samples, T0 + 12 * MIN).onset == T0 + 10 * MIN
