"""The detectors' own ``observe_many`` (replay's batched path, engine/segment.py) stops where, and leaves
each detector exactly as, feeding its samples one by one through ``observe`` does (the base class's
``observe_many``), on traces built from the real public logs (../shared/data/real): the llm.c run
with real step times, checkpoint pauses, restarts (step rewinds), a hang, a slow host and a loss jump."""

from __future__ import annotations

import dataclasses
import random
from collections import deque

import pytest

from monitor.rules.base import DETECTORS, Detector
from monitor.samples import Sample
from tests.rules.helpers_rules import hero, rule
from tests.rules.real_scenarios import Scenario, step_change
from tests.rules.test_replay_batched import HOUR, plain, run_both

TOKENS_PER_STEP = 524_288.0  # llm.c GPT-2 124M: 0.5M tokens a step


def with_throughput(samples: list[Sample]) -> list[Sample]:
    """Rows with the tokens per second of each step (from its real step time) and a skipped-step count
    (1 where the grad norm exceeds 1, as a skip-step guard would), as a Levanter run logs them."""
    out, prev = [], None
    for s in samples:
        if "train/loss" in s.metrics and s.step is not None:
            extra = {"optim/skipped_step": float(s.metrics["grad/norm/total"] > 1.0)}
            if prev is not None and s.step > prev.step and s.t > prev.t:
                extra["throughput/tokens_per_second"] = (
                    TOKENS_PER_STEP * (s.step - prev.step) / (s.t - prev.t)
                )
            prev = s
            s = dataclasses.replace(s, metrics={**s.metrics, **extra})
        out.append(s)
    return out


TRACES = {
    "healthy": lambda: Scenario(last_step=6000),
    "slow host": lambda: Scenario(slow=step_change(1.5 * HOUR, 1 / 0.9), last_step=8000),
    "loss jump": lambda: Scenario(
        loss_shift=lambda step: 1.0 if 4000 <= step < 4400 else 0.0, last_step=6000
    ),
    "crash loop": lambda: Scenario(restarts=[(2500, 300.0), (2600, 300.0), (2700, 300.0)], last_step=5000),
    "hang": lambda: Scenario(hang_after_step=3000, watch_after=3600),
}

# the hero pack's rules, and the same kinds on other real columns (the counters on values that move)
RULES = [
    *hero(),
    rule(kind="drop", metric="grad/norm/total", drop=0.1, window=300, baseline=3600),
    rule(kind="counter_increase", metric="optim/learning_rate", increase=1e-5, window=900),
    rule(kind="counter_increase", metric="optim/skipped_step", cumulative=False, increase=1, window=600),
    rule(kind="spike", metric="grad/norm/total", mode="point", severity="info"),
    rule(kind="trend", metric="grad/norm/total", window=600, direction="down"),
    # spike floors that rise often (values in a row beyond the bar, a raised floor held through dips,
    # rewinds): the batched loop's way in and out of its common case, on the rl pack's settings too
    rule(kind="spike", metric="grad/norm/total", mode="floor", floor_steps=4, z=3, min_rise=0.05),
    rule(
        kind="spike",
        metric="train/loss",
        mode="floor",
        direction="down",
        baseline_level="max",
        floor_steps=3,
        floor_window=600,
        floor_points=3,
        min_points=8,
        z=3,
        min_rise=0,
    ),
    rule(
        kind="spike",
        metric="train/loss",
        mode="floor",
        direction="down",
        of_progress=0.5,
        floor_steps=3,
        floor_window=900,
        floor_points=3,
        min_points=8,
        z=3,
        min_rise=0,
        baseline=3 * 3600,
    ),
]


def state(obj: object) -> str:
    """Everything a detector holds, as text (floats by repr: exact, and NaN equal to itself)."""

    def walk(v: object, depth: int = 0) -> object:
        if depth > 6:
            return repr(v)
        if isinstance(v, deque | list | tuple):
            return [walk(x, depth + 1) for x in v]
        if isinstance(v, dict):
            return {k: walk(x, depth + 1) for k, x in v.items()}
        if type(v).__module__.startswith("monitor.rules"):  # a detector and the objects it is made of
            names = [
                *getattr(v, "__dict__", ()),
                *(n for c in type(v).__mro__ for n in getattr(c, "__slots__", ())),
            ]
            return {n: walk(getattr(v, n), depth + 1) for n in names if n != "rule" and hasattr(v, n)}
        return v

    return repr(walk(obj))


def drive(det: Detector, samples: list[Sample], cuts: list[int], own: bool) -> list[tuple]:
    """Feed ``samples`` as the batched replay does: plain stretches with the same metric names cut at
    ``cuts`` through ``observe_many`` (evaluated at each stop), other samples through ``observe``.
    Returns every stop, with the detector's state at every 8th and at the end."""
    observe_many = det.observe_many if own else lambda s, i, end: Detector.observe_many(det, s, i, end)
    seen, i, n = [], 0, len(samples)
    cut = iter(cuts)
    next_cut = next(cut, n)
    while i < n:
        s = samples[i]
        if s.state is not None or s.source_error is not None:
            det.observe(s)
            i += 1
            continue
        j = i + 1
        while (
            j < n
            and j < next_cut
            and samples[j].state is None
            and samples[j].metrics.keys() == s.metrics.keys()
        ):
            j += 1
        while next_cut <= j:
            next_cut = next(cut, n + 1)
        while i < j:
            i, code = observe_many(samples, i, j)
            if code:
                det.evaluate(samples[i - 1].t)
            seen.append((i, code, det.hot, state(det) if len(seen) % 8 == 0 else None))
    seen.append((i, 0, det.hot, state(det)))
    return seen


@pytest.mark.parametrize("trace", sorted(TRACES))
def test_own_observe_many_stops_and_ends_as_sample_by_sample(trace):
    samples = with_throughput(plain(TRACES[trace]().build()))
    rng = random.Random(trace)
    cuts = sorted(rng.sample(range(1, len(samples)), len(samples) // 200))  # the replayer's own cuts
    checked = 0
    for spec in RULES:
        cls = DETECTORS[spec.kind]
        if cls.observe_many is Detector.observe_many:
            continue
        own = drive(cls(spec, "r"), samples, cuts, own=True)
        reference = drive(cls(spec, "r"), samples, cuts, own=False)
        assert [s[:3] for s in own] == [s[:3] for s in reference], spec.name
        assert own == reference, spec.name
        checked += 1
    assert checked >= 15


def test_batched_replay_of_a_real_trace_with_throughput_finds_what_sample_by_sample_finds():
    sc = Scenario(slow=step_change(1.5 * HOUR, 1 / 0.8), restarts=[(2500, 300.0)], last_step=7000)
    samples = with_throughput(plain(sc.build()))
    batched, reference = run_both(samples, sc.end)
    assert batched == reference
    fired = {e[2]["rule"] for e in reference[0] if e[2]["state"] == "firing"}
    assert {"skipped_steps", "run_restarted", "loss_jump"} <= fired, fired


def test_values_where_a_buckets_end_time_rounds_down_stay_in_their_bucket():
    """Bucket widths that are not exact in binary (7 s / 60, 3.5 s / 30, 7/6 s / 10: all 7/60 s): at some
    times the bucket's end, computed, rounds down onto a sample still in the bucket (1700000005.55 is in
    bucket 14571428618 of 7/60 s, whose end computes to 1700000005.55). A trace with a value just before
    each such time, at it and just after: the threshold, spike and drop batched loops (which tell a new
    bucket by its end time) put those values where ``observe`` one by one does: the same stops and
    state."""
    width, rng, samples = 7 / 60, random.Random(7), []
    for k in range(8000):
        t = 1_700_000_000.0 + k * 0.37
        at_edge = (t // width + 1) * width <= t
        for u in (t - 0.05, t, t + 0.05) if at_edge else (t,):
            jump = 3.0 if k % 700 in range(300, 330) else 1.0  # a raised stretch: the rules fire and clear
            loss = jump * (2.0 + 0.05 * rng.gauss(0.0, 1.0))
            metrics = {"train/loss": loss, "grad/norm/total": 0.3 * jump, "tokens": 1e5 / jump}
            samples.append(Sample(u, "r", len(samples), metrics))
    assert len(samples) > 8000 + 2 * 50  # the case is in the trace, often
    specs = [
        rule(kind="threshold", metric="train/loss", above=4.0, mode="fraction", window=7, min_samples=3),
        rule(kind="threshold", metric="train/loss", above=4.0, mode="mean", window=7, min_samples=3),
        rule(kind="spike", metric="train/loss", mode="floor", floor_window=3.5, baseline=60, min_points=8),
        rule(kind="spike", metric="grad/norm/total", mode="point", floor_window=3.5, severity="info"),
        rule(kind="drop", metric="tokens", drop=0.1, window=7 / 6, baseline=30, min_baseline_points=5),
    ]
    cuts = list(range(5, len(samples), 5))  # short stretches: the state is compared every 40 samples
    for spec in specs:
        cls = DETECTORS[spec.kind]
        own, reference = cls(spec, "r"), cls(spec, "r")
        stops = drive(own, samples, cuts, own=True)
        assert stops == drive(reference, samples, cuts, own=False), spec.name
        assert any(stop[2] for stop in stops), spec.name  # the window judged something, not only quiet values
        assert state(own) == state(reference), spec.name
