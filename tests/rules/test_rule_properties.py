"""Properties of the detectors, over many generated series (hypothesis):
a constant or slowly falling series never fires; any NaN fires; a shifted floor fires."""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.rules.helpers_rules import T0, hero

HEALTHY = {
    "grad/norm/total": 0.3,
    "throughput/tokens_per_second": 4e5,
    "throughput/mfu": 40.0,
    "optim/skipped_step": 0.0,
    "moe/drop_fraction": 0.02,
    "train/router/routing_entropy_mean": 6.2,
}


def run(losses: list[float], every: float, extra: dict[str, float] | None = None) -> list[Sample]:
    metrics = {**HEALTHY, **(extra or {})}
    return [
        Sample(T0 + i * every, "r", i, {"train/loss": v, **metrics}, "running") for i, v in enumerate(losses)
    ]


@given(
    level=st.floats(0.5, 12.0),
    slope=st.floats(0.0, 2e-4),  # relative fall per step, up to 2% per 100 steps
    n=st.integers(50, 600),
    every=st.sampled_from([1.0, 10.0, 60.0]),
)
@settings(max_examples=40, deadline=None)
def test_a_constant_or_slowly_falling_series_never_fires(level, slope, n, every):
    losses = [level * (1 - slope) ** i for i in range(n)]
    result = replay(run(losses, every), hero())
    assert result.events == []


@given(
    level=st.floats(0.5, 12.0),
    n=st.integers(30, 300),
    where=st.floats(0, 1),
    bad=st.sampled_from([math.nan, math.inf, -math.inf]),
    seed=st.integers(0, 1000),
)
@settings(max_examples=40, deadline=None)
def test_any_nan_fires_at_once(level, n, where, bad, seed):
    rng = random.Random(seed)
    losses = [level * (1 + 0.02 * rng.gauss(0, 1)) for _ in range(n)]
    at = int(where * (n - 1))
    losses[at] = bad
    result = replay(run(losses, 10.0), hero())
    nonfinite = [e for e in result.events if e.rule == "loss_nonfinite" and e.state == "firing"]
    assert nonfinite and nonfinite[0].step == at and nonfinite[0].t == T0 + at * 10.0
    assert nonfinite[0].severity == "critical"


@given(
    level=st.floats(0.5, 12.0),
    # at least 1.3x: at 1.25x with 2% noise the raised values' lower tail (-4 sigma) dips under the floor
    # the rule needs, and the 5-minute window then waits for a quiet stretch (hypothesis found 1.25x,
    # noise 0.0195, seed 998: fired after 7.5 minutes; correct, but not within the window asserted here)
    shift=st.floats(1.3, 4.0),
    noise=st.floats(0.0, 0.02),
    seed=st.integers(0, 1000),
    every=st.sampled_from([1.0, 10.0, 30.0]),
)
@settings(max_examples=40, deadline=None)
def test_a_shifted_floor_fires(level, shift, noise, seed, every):
    rng = random.Random(seed)
    before = int(1800 / every)  # 30 minutes of baseline
    after = int(900 / every)  # 15 minutes raised
    losses = [level * (1 + noise * rng.gauss(0, 1)) for _ in range(before)]
    losses += [level * shift * (1 + noise * rng.gauss(0, 1)) for _ in range(after)]
    result = replay(run(losses, every), hero())
    spikes = [e for e in result.events if e.rule == "loss_spike" and e.state == "firing"]
    assert spikes, "a loss that stays raised must page"
    shifted_at = T0 + before * every
    # a floor, not a blip: at least half its 5m window, or the hero pack's floor_steps (64) values in a row
    # (a fast run); and within the window
    assert shifted_at + min(150, 63 * every) <= spikes[0].t <= shifted_at + 300 + 2 * every
