"""The rules that take their common case a stretch at a time over a batch's columns (rules/columns.py:
trend, counter, non_finite, stall; threshold counts its open bucket from the indices) stop where, and end
exactly as, feeding the samples one by one does, on values that leave the common case at random: NaN,
Inf, zeros on a log scale, increases, step rewinds, steps before ``after_step`` and missing steps; both
with the columns of a plain list and with those of the batch being fed (``columns.feeding``)."""

from __future__ import annotations

import math
import random

import pytest

from monitor.rules.base import DETECTORS
from monitor.rules.columns import Batch, feeding
from monitor.samples import Sample
from tests.rules.helpers_rules import rule
from tests.rules.test_observe_many import drive

SPECS = [
    rule(kind="threshold", metric="x", above=1.5, mode="fraction", window=60, min_samples=3, after_step=40),
    rule(kind="threshold", metric="x", below=0.8, mode="mean", window=30, min_samples=2),
    rule(kind="trend", metric="x", window=120, buckets=10, min_steps=5),
    rule(kind="trend", metric="x", window=120, buckets=10, min_steps=5, scale="linear", direction="down"),
    rule(kind="counter_increase", metric="c", increase=2, window=30),
    rule(kind="counter_increase", metric="c", cumulative=False, increase=1, window=30),
    rule(kind="non_finite", metric="x"),
    rule(kind="stall", floor=60, k=3, startup=120),
    rule(kind="stall", floor=30, k=2, startup=60, window=40),
]


def _samples(seed: int, n: int = 3000) -> list[Sample]:
    rng, out, step, c, t = random.Random(seed), [], 0, 0.0, 1000.0
    for k in range(n):
        r = rng.random()
        x = 1.0 + 0.2 * rng.gauss(0.0, 1.0) + (1.0 if (k // 300) % 3 == 2 else 0.0)
        if r < 0.01:
            x = math.nan
        elif r < 0.015:
            x = math.inf
        elif r < 0.02:
            x = 0.0
        step = max(0, step - 50) if rng.random() < 0.003 else step + rng.choice((1,) * 30 + (2, 0))
        # (now and then a rewind, a step logged twice, a stride of 2; now and then a pause)
        t += 1.3 if rng.random() > 0.01 else rng.uniform(5.0, 400.0)
        if rng.random() < 0.004:
            c += 1.0  # the counter moves now and then
        metrics = {"x": x, "c": c if rng.random() > 0.05 else 0.0}
        out.append(Sample(t, "r", None if rng.random() < 0.01 else step, metrics))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("batch", [False, True])
def test_stretches_stop_and_end_as_sample_by_sample(seed, batch):
    samples = _samples(seed)
    cuts = sorted(random.Random(seed).sample(range(1, len(samples)), 12))
    if batch:
        feeding(Batch(samples, ("x", "c")))
    try:
        for spec in SPECS:
            cls = DETECTORS[spec.kind]
            own = drive(cls(spec, "r"), samples, cuts, own=True)
            reference = drive(cls(spec, "r"), samples, cuts, own=False)
            assert own == reference, spec.name
    finally:
        feeding(None)
