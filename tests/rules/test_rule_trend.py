"""``trend`` (the hero pack's ``loss_diverging``) on the real llm.c log: a loss rising +0.5 over 2,000
steps, with no single spike, pages within 30 minutes; the healthy real logs never raise it, nor do
spikes and bumps that come back down."""

from __future__ import annotations

import json

import pytest

from monitor.rules.trend import TrendDetector
from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.rules.helpers_rules import T0, hero, llmc_samples, rule
from tests.rules.real_scenarios import Scenario
from tests.rules.test_rule_real_data import bloom_samples


def diverging(samples: list[Sample], end: float | None = None) -> list:
    return [e for e in replay(samples, hero(), end=end).events if e.rule == "loss_diverging"]


def rise_from(at: int, size: float = 0.5, over: int = 2000):
    return lambda step: size * (step - at) / over if step >= at else 0.0


@pytest.mark.parametrize("step_time", [1.0, 1.7])
@pytest.mark.parametrize("at", [3000, 10000, 15000])
def test_a_loss_rising_half_a_nat_over_2000_steps_pages_within_30_minutes(at, step_time):
    sc = Scenario(step_time=step_time, loss_shift=rise_from(at))  # saves, evals and real jitter too
    events = diverging(sc.build(), sc.end)
    first = next(e for e in events if e.state == "firing")
    assert sc.step_at[at] < first.t <= sc.step_at[at] + 30 * 60, (first.t - sc.step_at[at]) / 60
    assert first.severity == "critical" and "diverging" in first.reason


def test_a_slow_run_diverging_over_hours_is_caught_by_the_longer_windows():
    sc = Scenario(step_time=10.0, loss_shift=rise_from(10000))  # 2,000 steps take 5.5 hours here
    first = next(e for e in diverging(sc.build(), sc.end) if e.state == "firing")
    assert first.t - sc.step_at[10000] <= 2 * 3600
    assert "over the last 1h" in first.reason


@pytest.mark.parametrize(
    "samples",
    [
        pytest.param(lambda: llmc_samples(every=1.0), id="llmc-1s-steady"),
        pytest.param(lambda: Scenario().build(), id="llmc-1.7s-saves-evals-jitter"),
        pytest.param(lambda: Scenario(step_time=10.0).build(), id="llmc-10s"),
        pytest.param(lambda: Scenario(jitter_hold=10).build(), id="llmc-slow-jitter"),
        pytest.param(bloom_samples, id="bloom-176b-excerpts"),
    ],
)
def test_the_healthy_real_logs_never_raise_it(samples):
    assert diverging(samples()) == []


@pytest.mark.parametrize(
    "shift",
    [
        pytest.param(lambda s: 2.0 if s == 12000 else 0.0, id="one-step-spike"),
        pytest.param(lambda s: 0.3 * max(0.0, 1 - abs(s - 12100) / 100), id="bump-over-200-steps"),
        pytest.param(lambda s: 0.3 if 12000 <= s < 12030 else 0.0, id="bloom-like-30-step-spike"),
    ],
)
def test_spikes_and_bumps_that_come_back_down_are_no_divergence(shift):
    sc = Scenario(loss_shift=shift)
    assert diverging(sc.build(), sc.end) == []


# ---- the detector -------------------------------------------------------------------------------
def feed(det: TrendDetector, values: list[float], every: float = 10.0, metric: str = "m") -> None:
    for i, v in enumerate(values):
        det.observe(Sample(T0 + i * every, "r", i, {metric: v}))


def test_it_cannot_tell_until_the_window_is_filled():
    d = TrendDetector(rule(kind="trend", metric="m"), "r")
    feed(d, [2.0] * 60)  # 10 minutes of a 30-minute window
    f = d.evaluate(T0 + 600)
    assert f.unknown and not f.active


def test_falling_and_linear_scale_and_a_rewind_starts_afresh():
    d = TrendDetector(rule(kind="trend", metric="acc", direction="down", scale="linear", min_rise=0.03), "r")
    feed(d, [0.9 - 0.0002 * i for i in range(360)], metric="acc")  # -0.072 in an hour
    f = d.evaluate(T0 + 3600)
    assert f.active and "acc fell steadily by 0.0" in f.reason
    d.observe(Sample(T0 + 3610, "r", 5, {"acc": 0.8}))  # a rewind
    assert d.resets == 1 and d.evaluate(T0 + 3610).unknown
    json.dumps(d.export_state())  # (its windows hold arrays of doubles: the snapshot writes them)


def test_at_100_s_a_step_half_an_hour_of_steps_cannot_tell_and_the_2_hour_window_does():
    """18 steps (30 minutes at 100 s a step) rising steadily are a few noisy batches, not a divergence;
    the same rise sustained over 2 hours (72 steps) is."""
    d = TrendDetector(rule(kind="trend", metric="m"), "r")
    steady_then_rising = [3.0] * 200 + [3.0 * 1.002**k for k in range(1, 101)]  # +0.2% a step
    for i, v in enumerate(steady_then_rising[:218]):
        d.observe(Sample(T0 + i * 100.0, "r", i, {"m": v}))
        assert not d.evaluate(T0 + i * 100.0).active, i  # 18 steps up: not yet
    fired = None
    for i, v in enumerate(steady_then_rising[218:], 218):
        d.observe(Sample(T0 + i * 100.0, "r", i, {"m": v}))
        f = d.evaluate(T0 + i * 100.0)
        if f.active:
            fired = i
            break
    assert fired is not None and fired - 200 <= 72, fired
    assert d.hit == 1 and "over the last 1h" in f.reason, f.reason  # the 2-hour window
