"""``stall``: adaptive limit, start-up and restore allowances, learned pauses, and what holds it off."""

from __future__ import annotations

from monitor.rules.stall import StallDetector
from monitor.samples import Sample
from tests.rules.helpers_rules import T0, feed, rule

MIN = 60.0


def stall(**params: object) -> StallDetector:
    return StallDetector(rule(kind="stall", **params), "r")


def run_steps(
    det: StallDetector, times: list[float], first_step: int = 0, state: str | None = "running"
) -> None:
    feed(det, [Sample(T0 + t, "r", first_step + i, {"train/loss": 2.0}, state) for i, t in enumerate(times)])


def test_fires_after_the_floor_without_a_new_step_and_not_before():
    det = stall()
    run_steps(det, [i * 10.0 for i in range(50)])  # last step at 490s
    last = T0 + 490
    assert not det.evaluate(last + 14 * MIN).active
    f = det.evaluate(last + 15 * MIN + 5)
    assert f.active and f.threshold == 900 and f.step == 49
    assert "no new step for 15m5s" in f.reason


def test_the_limit_follows_a_slow_cadence():
    det = stall()
    run_steps(det, [i * 60.0 for i in range(30)])  # 60s steps: limit = 10 x 60s, past the floor
    assert det.limit() == 900
    det = stall()
    run_steps(det, [i * 200.0 for i in range(30)])  # 200s steps: the floor past the usual step
    last = T0 + 29 * 200
    assert det.limit() == 200 + 900  # (10 steps would be 33 minutes: issue 39 wants 15 past the step)
    assert not det.evaluate(last + 18 * MIN).active
    assert det.evaluate(last + 19 * MIN).active


def test_one_long_gap_does_not_inflate_the_limit():
    det = stall()
    times = [i * 10.0 for i in range(20)] + [190 + 3 * 3600 + i * 10.0 for i in range(20)]
    run_steps(det, times)
    assert det.limit() == 900  # the 3h gap is a pause, not cadence: the p99 stays ~10s
    assert det.evaluate(T0 + times[-1] + 16 * MIN).active


def test_recurring_pauses_are_learned_a_one_off_is_not():
    det = stall()
    times, t = [], 0.0
    for pause in (20 * MIN, 21 * MIN):  # e.g. two checkpoint saves of 20 minutes
        times += [t + i * 10.0 for i in range(30)]
        t = times[-1] + pause
    times += [t + i * 10.0 for i in range(30)]
    run_steps(det, times)
    assert det.recurring_pause() == 21 * MIN
    assert det.limit() == 1.5 * 21 * MIN
    assert not det.evaluate(T0 + times[-1] + 25 * MIN).active  # a third save is allowed for
    assert det.evaluate(T0 + times[-1] + 32 * MIN).active

    one_off = stall()
    run_steps(one_off, [i * 10.0 for i in range(30)] + [290 + 3 * 3600 + i * 10.0 for i in range(30)])
    assert one_off.recurring_pause() is None and one_off.limit() == 900


def test_learned_pauses_are_capped():
    det = stall(max_pause="1h")
    times, t = [], 0.0
    for _ in range(3):
        times += [t + i * 10.0 for i in range(10)]
        t = times[-1] + 2 * 3600
    run_steps(det, times)
    assert det.limit() == 3600


def test_start_up_allowance_before_the_first_step():
    det = stall()
    feed(det, [Sample(T0 + i * MIN, "r", state="running") for i in range(60)])
    assert not det.evaluate(T0 + 44 * MIN).active
    f = det.evaluate(T0 + 46 * MIN)
    assert f.active and "no first step 46m after start" in f.reason


def test_restore_allowance_is_learned_from_earlier_restores():
    det = stall()
    run_steps(det, [i * 10.0 for i in range(10)])
    t = 100.0
    for state in ("crashed", "running"):  # resumed; the first step comes 10 minutes later
        t += MIN
        feed(det, [Sample(T0 + t, "r", state=state)])
    resumed = t
    run_steps(det, [resumed + 10 * MIN + i * 10.0 for i in range(10)], first_step=5)
    assert list(det.restores) == [10 * MIN]
    # the next restore is allowed 2 x 10 minutes, not the default 45
    t = resumed + 20 * MIN
    for state in ("crashed", "running"):
        t += MIN
        feed(det, [Sample(T0 + t, "r", state=state)])
    assert det.startup_allowance() == 20 * MIN
    assert not det.evaluate(T0 + t + 19 * MIN).active
    f = det.evaluate(T0 + t + 21 * MIN)
    assert f.active and "after restart" in f.reason and "learned" in f.reason


def test_a_restart_counter_increase_starts_the_restore_allowance():
    det = stall()
    run_steps(det, [i * 10.0 for i in range(10)])
    feed(
        det,
        [
            Sample(T0 + 100, "r", metrics={"restarts_total": 0.0}),
            Sample(T0 + 200, "r", metrics={"restarts_total": 1.0}),
        ],
    )
    assert not det.evaluate(T0 + 200 + 44 * MIN).active  # the 45-minute start-up allowance, not 15
    assert det.evaluate(T0 + 200 + 46 * MIN).active


def test_not_running_means_not_stalled():
    for state in ("finished", "crashed", "preempted"):
        det = stall()
        run_steps(det, [i * 10.0 for i in range(10)])
        feed(det, [Sample(T0 + 100, "r", state=state)])
        assert not det.evaluate(T0 + 10 * 3600).active, state


def test_an_unreadable_source_holds_it_off_until_data_returns():
    det = stall()
    run_steps(det, [i * 10.0 for i in range(10)])
    feed(det, [Sample(T0 + 200, "r", source_error="wandb: 503")])
    f = det.evaluate(T0 + 3600)
    assert not f.active and "unknown" in f.reason
    feed(det, [Sample(T0 + 3600, "r", state="running")])  # readable again, still no new step
    assert det.evaluate(T0 + 3600).active


def test_a_run_that_never_reports_steps_never_stalls():
    det = stall()
    feed(det, [Sample(T0 + i * MIN, "r", metrics={"gpu_sm_active_ratio": 0.9}) for i in range(200)])
    assert not det.evaluate(T0 + 200 * MIN).active


def test_wake_at_never_later_than_the_condition():
    det = stall()
    run_steps(det, [i * 10.0 for i in range(20)])
    assert det.wake_at == T0 + 190 + 900
    assert not det.evaluate(det.wake_at).active and det.evaluate(det.wake_at + 1).active
