"""Replay's batched observation (engine/segment.py) finds exactly what feeding the evaluator sample by
sample finds: the same transitions at the same times, with the same reasons, on real traces with
incidents, and the same detector figures at the end."""

from __future__ import annotations

import dataclasses
import math

import pytest

from monitor.samples import Sample
from monitor.traces.replay import Replayer
from tests.rules.helpers_rules import T0, hero
from tests.rules.real_scenarios import Scenario, ramp, step_change

HOUR = 3600.0


def plain(samples: list[Sample]) -> list[Sample]:
    """The rows as W&B history gives them: metrics and steps, the state only in the run list's polls."""
    return [dataclasses.replace(s, state=None) if s.metrics and s.state == "running" else s for s in samples]


def run_both(samples: list[Sample], end: float, check_segments: bool = True) -> tuple[list, list]:
    out = []
    for batched in (True, False):
        r = Replayer(hero(), batched=batched)
        taken = []
        segment = r._ev.observe_segment
        r._ev.observe_segment = lambda run, buf, i, j, _f=segment, _n=taken: (
            _n.append(j - i) or _f(run, buf, i, j)
        )
        for s in samples:
            r.feed(s)
        events = r.finish(end)
        stats = {
            run: (summary.samples, summary.last_step, summary.stats) for run, summary in r.summaries.items()
        }
        out.append(([(e.t, e.fingerprint, e.to_json()) for e in events], stats))
        if batched and check_segments:  # the batched path did the work, in segments of several samples
            assert sum(taken) > len(samples) / 2 and max(taken) >= 8, (sum(taken), len(samples), max(taken))
    return out[0], out[1]


def nan_at(samples: list[Sample], step: int) -> list[Sample]:
    return [
        dataclasses.replace(s, metrics={**s.metrics, "train/loss": math.nan}) if s.step == step else s
        for s in samples
    ]


SCENARIOS = {
    "healthy": lambda: Scenario(last_step=6000),
    "slow host": lambda: Scenario(slow=step_change(1.5 * HOUR, 1 / 0.9), last_step=8000),
    "loss diverging": lambda: Scenario(
        loss_shift=lambda step: max(0.0, (step - 3000) / 1500), last_step=7000
    ),
    "loss jump": lambda: Scenario(
        loss_shift=lambda step: 1.0 if 4000 <= step < 4400 else 0.0, last_step=6000
    ),
    "hang": lambda: Scenario(hang_after_step=3000, watch_after=3600),
    "crash loop": lambda: Scenario(restarts=[(2500, 300.0), (2600, 300.0), (2700, 300.0)], last_step=5000),
    "crashed": lambda: Scenario(last_step=3000, end_state="crashed", watch_after=3600),
    "ramp, sparse logging": lambda: Scenario(slow=ramp(HOUR, HOUR, 0.3), log_every=10, last_step=9000),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_batched_replay_finds_what_sample_by_sample_finds(name):
    sc = SCENARIOS[name]()
    samples = plain(sc.build())
    if name == "healthy":
        samples = nan_at(samples, 4500)
    batched, reference = run_both(samples, sc.end)
    assert batched == reference
    if name != "healthy":
        assert any(e[2]["state"] == "firing" for e in reference[0]), "the incident must show"


def test_two_runs_interleaved_and_a_source_outage_give_the_same_events():
    a = plain(Scenario(last_step=2500, slow=step_change(0.5 * HOUR, 1.5)).build())
    b = [dataclasses.replace(s, run="other", t=s.t + 0.5) for s in plain(Scenario(last_step=2500).build())]
    outage = [
        Sample(T0 + 1800 + k, "other", source="wandb", source_error="timeout") for k in range(0, 900, 60)
    ]
    samples = sorted(a + b + outage, key=lambda s: s.t)
    batched, reference = run_both(samples, max(s.t for s in samples) + 3600, check_segments=False)
    assert batched == reference
    assert any(e[2]["state"] == "firing" for e in reference[0])
