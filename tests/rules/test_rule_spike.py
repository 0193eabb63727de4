"""``spike``: warm-up, one-step blips (recorded, info) versus a raised floor (pages), resets."""

from __future__ import annotations

import math
import random

import pytest
from pydantic import ValidationError

from monitor.engine.evaluator import Evaluator
from monitor.rules.spike import SpikeDetector
from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.rules.helpers_rules import T0, feed, hero, rule, steps


def spike(**params: object) -> SpikeDetector:
    params.setdefault("metric", "train/loss")
    params.setdefault("severity", "info" if params.get("mode") == "point" else "critical")
    return SpikeDetector(rule(kind="spike", **params), "r")


def noisy(n: int, level: float = 2.0, noise: float = 0.01, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [level * (1 + noise * rng.gauss(0, 1)) for _ in range(n)]


def test_warming_up_until_the_baseline_has_enough_values():
    det = spike(mode="point", min_points=8)
    feed(det, steps([2.0] * 20 + [9.0], every=60.0))  # 20 minutes, but only ~15 values older than 5m
    assert det.baseline.ready
    fresh = spike(mode="point", min_points=8)
    feed(fresh, steps([2.0] * 6 + [9.0], every=60.0))
    f = fresh.evaluate(T0 + 400)
    assert not f.active and "warming up" in f.reason and fresh.score is None


def test_a_one_step_blip_is_recorded_and_clears_at_the_next_step():
    det = spike(mode="point")
    values = noisy(120) + [4.0] + noisy(10, seed=2)
    samples = steps(values)
    feed(det, samples[:121])
    f = det.evaluate(samples[120].t)
    assert f.active and f.step == 120 and "one-step spike" in f.reason
    assert det.score >= 6 and det.spikes == 1
    stats = det.stats()
    assert stats["spikes"] == 1 and stats["last_spike_step"] == 120 and stats["last_spike_score"] >= 6
    feed(det, samples[121:122])
    assert not det.evaluate(samples[121].t).active and det.score < 6


def test_a_blip_does_not_raise_the_floor_a_sustained_rise_does():
    blip = spike(mode="floor")
    feed(blip, steps(noisy(120) + [4.0] + noisy(60, seed=2)))
    assert not blip.hot and not blip.evaluate(T0 + 1810).active

    det = spike(mode="floor")
    before = noisy(120)
    feed(det, steps(before + noisy(29, level=2.6, seed=3)))  # < 5 minutes raised
    assert not det.hot
    feed(det, steps(noisy(4, level=2.6, seed=4), t0=T0 + 1490, start_step=149))
    f = det.evaluate(T0 + 1520)
    assert f.active and "has stayed above" in f.reason and f.value == pytest.approx(2.6, rel=0.05)


def test_a_raised_floor_does_not_become_the_new_normal_while_it_alerts():
    det = spike(mode="floor")
    feed(det, steps(noisy(120) + noisy(600, level=2.6, seed=5)))  # raised for 100 minutes
    assert det.hot  # the baseline stayed frozen at ~2.0
    assert det.baseline.raw(det.baseline.median()) == pytest.approx(2.0, rel=0.03)
    feed(det, steps(noisy(60, seed=6), t0=T0 + 7200, start_step=720))
    assert not det.hot


def test_a_step_rewind_resets_the_baseline():
    det = spike(mode="point")
    feed(det, steps(noisy(100)))
    assert det.baseline.ready
    feed(det, steps([2.0], t0=T0 + 1200, start_step=50))  # restarted from step 50
    assert not det.baseline.ready and det.baseline.resets == 1


def test_missing_non_finite_and_non_positive_values_are_skipped():
    det = spike(mode="point")
    feed(det, steps(noisy(100)))
    before = det.baseline.latest
    for v in (math.nan, math.inf, 0.0, -1.0):
        det.observe(Sample(T0 + 2000, "r", 200, {"train/loss": v}))
    det.observe(Sample(T0 + 2000, "r", 200, {"other": 1.0}))
    assert det.baseline.latest == before


def test_down_direction_and_linear_scale():
    det = spike(
        mode="point",
        metric="train/router/routing_entropy_mean",
        direction="down",
        scale="linear",
        min_rise=0.3,
    )
    feed(det, steps(noisy(120, level=6.2, noise=0.002), metric="train/router/routing_entropy_mean"))
    feed(det, steps([5.0], metric="train/router/routing_entropy_mean", t0=T0 + 1200, start_step=120))
    f = det.evaluate(T0 + 1200)
    assert f.active and "below its baseline" in f.reason


def test_a_blip_rule_must_be_info():
    with pytest.raises(ValidationError, match="must be info"):
        rule(kind="spike", metric="train/loss", mode="point", severity="warning")
    rule(kind="spike", metric="train/loss", mode="floor", severity="critical")


def test_rules_on_the_same_statistics_share_one_baseline_with_the_same_results():
    point = rule(name="jump", kind="spike", metric="train/loss", mode="point", severity="info")
    floor = rule(name="floor", kind="spike", metric="train/loss", mode="floor", severity="critical")
    ev = Evaluator(lambda run: [point, floor])
    (_, a), (_, b) = ev.detectors("r")
    assert a.baseline is b.baseline
    samples = steps(noisy(120) + [4.0] + noisy(30, seed=2) + noisy(100, level=2.6, seed=3))
    together = [(e.t, e.rule, e.state, e.step) for e in replay(samples, [point, floor]).events]
    apart = [(e.t, e.rule, e.state, e.step) for r in (point, floor) for e in replay(samples, [r]).events]
    assert sorted(together) == sorted(apart)
    assert {r for _, r, s, _ in together if s == "firing"} == {"jump", "floor"}


def _raised_then_rewound(after: list[float]) -> list:
    """A floor raised to ~2.6 over a ~2.0 baseline for 30 minutes (it pages), then a restart from step
    100 (a rewind resets the baseline) logging ``after``."""
    before = steps(noisy(120) + noisy(180, level=2.6, seed=5))
    return before + steps(after, t0=before[-1].t + 300, start_step=100)


def test_a_resolution_after_a_rewind_says_the_loss_came_back_under_the_level_it_fired_on():
    floor = rule(name="loss_floor", kind="spike", metric="train/loss", mode="floor", severity="critical")
    events = replay(_raised_then_rewound(noisy(40, seed=7)), [floor]).events
    assert [e.state for e in events] == ["firing", "resolved"]
    why = events[-1].reason
    assert "warming up" not in why
    assert "is back below" in why and "the threshold it fired above" in why and "rewound" in why, why


def test_a_rewind_that_loses_the_baseline_while_the_loss_stays_high_does_not_resolve_it_as_warming_up():
    floor = rule(name="loss_floor", kind="spike", metric="train/loss", mode="floor", severity="critical")
    samples = _raised_then_rewound(noisy(4, level=2.6, seed=8))
    events = replay(samples, [floor], end=samples[-1].t).events
    assert [e.state for e in events] == ["firing"]  # still above where it fired: no verdict, still firing
    samples = _raised_then_rewound(noisy(200, level=2.6, seed=8))
    events = replay(samples, [floor]).events
    assert [e.state for e in events] == ["firing", "resolved"]
    why = events[-1].reason
    assert why.startswith("the evidence is gone: the run rewound and its baseline was rebuilt"), why
    assert "warming up" not in why


@pytest.mark.parametrize("dt", [1.0, 10.0, 100.0])
def test_a_divergence_with_a_brief_dip_is_one_alert_and_a_recovered_loss_resolves_within_a_window(dt):
    """The hero pack's loss_spike, at any cadence: the loss doubles, dips back to its baseline for two
    steps in the middle (the same divergence), then recovers for good. One firing, no resolve-and-re-page
    at the dip; resolved within one floor window (5m, or 64 steps in a row for a fast run) of the recovery,
    not half an hour of wall clock later, saying it is back under the bar."""
    [loss_spike] = [r for r in hero() if r.name == "loss_spike"]
    per_hour = int(3600 / dt)
    healthy = noisy(max(120, 3 * per_hour // 2))
    diverged = noisy(per_hour // 2, level=4.0, seed=3)  # 30 minutes
    values = healthy + diverged + noisy(2, seed=4) + diverged + noisy(per_hour, seed=5)
    samples = steps(values, every=dt)
    events = replay(samples, [loss_spike]).events
    assert [e.state for e in events] == ["firing", "resolved"], [(e.state, e.reason) for e in events]
    back = samples[len(healthy) + 2 * len(diverged) + 2].t  # the first value of the recovery
    window = min(300.0, 64 * dt)
    assert events[0].t < back and 0 <= events[1].t - back <= window + dt, (events[1].t - back, window)
    assert "is back below" in events[1].reason or "has been back below" in events[1].reason, events[1].reason


def test_while_held_through_a_dip_the_text_says_the_loss_is_back_and_what_ends_it():
    det = spike(mode="floor", floor_steps=64)
    feed(det, steps(noisy(120) + noisy(60, level=4.0, seed=3)))
    assert det.evaluate(T0 + 1790).active
    feed(det, steps(noisy(3, seed=4), t0=T0 + 1800, start_step=180))
    f = det.evaluate(T0 + 1820)
    assert f.active and det.hot, f.reason
    assert "is back below" in f.reason and "until it stays back for 5m or 64 values" in f.reason, f.reason
    feed(det, steps(noisy(3, level=4.0, seed=6), t0=T0 + 1830, start_step=183))
    f = det.evaluate(T0 + 1850)
    assert f.active and "but for a dip to" in f.reason and "has stayed" not in f.reason, f.reason
