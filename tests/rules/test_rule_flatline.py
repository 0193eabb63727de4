"""The ``flatline`` kind, and the spike options for metrics that move by nature (``baseline_level: max``,
``of_progress``), fed samples with injected times."""

from __future__ import annotations

import math
import random

from monitor.rules.kinds import DETECTORS
from tests.rules.helpers_rules import T0, feed, rule, steps

MIN = 60.0


def det(**raw: object):
    spec = rule(**raw)
    return DETECTORS[spec.kind](spec, "r")


def noisy(n: int, level: float = 0.5, sigma: float = 0.03, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [level + rng.gauss(0, sigma) for _ in range(n)]


def flat(**raw: object):
    return det(kind="flatline", metric="rl/reward/mean", window="30m", baseline="2h", **raw)


def test_a_reward_stuck_at_one_value_flatlines_after_the_window():
    d = flat()
    feed(d, steps(noisy(120), metric="rl/reward/mean", every=MIN))  # 2 hours of a moving reward
    feed(d, steps([0.0] * 40, metric="rl/reward/mean", every=MIN, t0=T0 + 120 * MIN, start_step=120))
    f = d.evaluate(T0 + 159 * MIN)
    assert f.active and "has not changed" in f.reason and "stuck at 0" in f.reason
    assert f.value == 0.0 and f.threshold > 0


def test_a_moving_metric_never_flatlines_and_a_quieter_one_neither():
    d = flat()
    feed(d, steps(noisy(200), metric="rl/reward/mean", every=MIN))
    feed(
        d,
        steps(
            noisy(100, sigma=0.01, seed=1),
            metric="rl/reward/mean",
            every=MIN,
            t0=T0 + 200 * MIN,
            start_step=200,
        ),
    )
    assert not d.hot and not d.evaluate(T0 + 299 * MIN).active  # a third of the noise is still movement


def test_flatline_works_at_a_slow_cadence_and_lapses_when_the_metric_is_gone():
    d = flat()
    every = 5 * MIN  # an RL step every 5 minutes
    feed(d, steps(noisy(30), metric="rl/reward/mean", every=every))
    feed(d, steps([1.0] * 8, metric="rl/reward/mean", every=every, t0=T0 + 30 * every, start_step=30))
    last = T0 + 37 * every
    assert d.evaluate(last).active
    assert d.holds_until() == last + 30 * MIN
    assert not d.evaluate(last + 31 * MIN).active  # no value for the whole window: not judged


def test_a_rewind_resets_the_flatline_baseline():
    d = flat()
    feed(d, steps(noisy(120), metric="rl/reward/mean", every=MIN))
    feed(d, steps([0.3] * 40, metric="rl/reward/mean", every=MIN, t0=T0 + 120 * MIN, start_step=10))
    assert not d.evaluate(T0 + 159 * MIN).active  # back to step 10: the run restarted, learn anew
    assert "learning how it moves" in d.evaluate(T0 + 159 * MIN).reason


def test_kl_against_its_highest_ignores_power_law_growth_and_catches_a_jump():
    def kl(i: int, jump: bool) -> float:
        base = 1e-6 + 0.05 * (i / 300) ** 2 / (1 + (i / 300) ** 2)
        return base * (30 if jump and i >= 400 else 1) * math.exp(random.Random(i).gauss(0, 0.15))

    for level, expect in (("max", False), ("median", True)):
        d = det(
            kind="spike",
            metric="rl/kl",
            mode="floor",
            baseline_level=level,
            min_rise=1.6,
            baseline="1h",
            floor_window="20m",
            severity="critical",
        )
        fired = False
        for i in range(400):
            feed(d, steps([kl(i, False)], metric="rl/kl", every=MIN, t0=T0 + i * MIN, start_step=i))
            fired |= d.evaluate(T0 + i * MIN).active
        assert fired is expect, level  # against its median, quadratic early growth looks like a blow-up
    d = det(
        kind="spike",
        metric="rl/kl",
        mode="floor",
        baseline_level="max",
        min_rise=1.6,
        baseline="1h",
        floor_window="20m",
        severity="critical",
    )
    feed(
        d,
        [
            s
            for i in range(460)
            for s in steps([kl(i, True)], metric="rl/kl", every=MIN, t0=T0 + i * MIN, start_step=i)
        ],
    )
    assert d.evaluate(T0 + 459 * MIN).active


def test_of_progress_keeps_a_saturated_reward_from_paging_on_a_dip():
    values = [0.2 + 0.8 * (1 - math.exp(-i / 30)) for i in range(200)] + [1.0] * 100 + [0.98] * 60
    raw = dict(
        kind="spike",
        metric="rl/reward/mean",
        mode="floor",
        direction="down",
        scale="linear",
        min_rise=0,
        z=4,
        baseline="3h",
        floor_window="30m",
        severity="critical",
    )
    for progress, expect in ((0.0, True), (0.5, False)):
        d = det(**raw, of_progress=progress)
        feed(d, steps(values, metric="rl/reward/mean", every=MIN))
        assert d.evaluate(T0 + 359 * MIN).active is expect, progress  # no noise left: sigma 0
    d = det(**raw, of_progress=0.5)
    feed(d, steps(values[:300] + [0.1] * 60, metric="rl/reward/mean", every=MIN))
    assert d.evaluate(T0 + 359 * MIN).active  # giving back far more than half of the gain is a collapse
