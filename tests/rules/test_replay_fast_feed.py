"""Replay's fast feed (``Replayer.feed``'s common case, and a batch's metric names taken once:
``Evaluator.vouch_names``) finds exactly what feeding the evaluator sample by sample finds, on real
traces (../shared/data/real) whose rows vary the way real ones do: keys in another order, rows without
a step or without a source, another run's rows in between."""

from __future__ import annotations

import dataclasses
import random

import pytest

from monitor.engine import segment
from monitor.samples import Sample
from monitor.traces.replay import Replayer
from tests.rules.helpers_rules import hero
from tests.rules.real_scenarios import Scenario, step_change
from tests.rules.test_observe_many import with_throughput
from tests.rules.test_replay_batched import HOUR, plain, run_both


def varied(samples: list[Sample], seed: int) -> list[Sample]:
    """Some rows with their keys in another order, some without a source, some without a step, some
    with an eval."""
    rng = random.Random(seed)
    out, evals = [], 0
    for s in samples:
        if s.state is None and s.metrics:
            r = rng.random()
            if r < 0.02:
                s = dataclasses.replace(s, metrics=dict(reversed(list(s.metrics.items()))))
            elif r < 0.04:
                s = dataclasses.replace(s, source=None)
            elif r < 0.05:
                s = dataclasses.replace(s, step=None)
            elif r < 0.06:  # an eval logged with the step's row, worse than the last one every other time
                evals += 1
                s = dataclasses.replace(s, metrics={**s.metrics, "eval/paloma/macro_loss": 3.0 + evals % 2})
        out.append(s)
    return out


def interleaved(samples: list[Sample]) -> list[Sample]:
    """The run and a copy of it under another name, 7 seconds later, their rows merged in time order."""
    other = [dataclasses.replace(s, run="other", t=s.t + 7.0) for s in samples]
    return sorted([*samples, *other], key=lambda s: s.t)


TRACES = {
    "slow host": lambda: Scenario(slow=step_change(1.5 * HOUR, 1 / 0.8), last_step=6000),
    "crash loop": lambda: Scenario(restarts=[(2500, 300.0), (2600, 300.0), (2700, 300.0)], last_step=5000),
    "loss jump": lambda: Scenario(
        loss_shift=lambda step: 1.0 if 4000 <= step < 4400 else 0.0, last_step=5000
    ),
}


@pytest.mark.parametrize("trace", sorted(TRACES))
def test_fast_feed_finds_what_sample_by_sample_finds_on_varied_rows(trace):
    sc = TRACES[trace]()
    samples = varied(with_throughput(plain(sc.build())), seed=len(trace))
    batched, reference = run_both(samples, sc.end)
    assert batched == reference
    fired = {e[2]["rule"] for e in reference[0] if e[2]["state"] == "firing"}
    assert "eval_regressed" in fired and len(fired) > 1, fired


def test_fast_feed_with_interleaved_runs_finds_what_sample_by_sample_finds():
    sc = Scenario(slow=step_change(HOUR, 1 / 0.8), restarts=[(2500, 300.0)], last_step=4000)
    samples = interleaved(varied(with_throughput(plain(sc.build())), seed=3))
    batched, reference = run_both(samples, sc.end + 7.0, check_segments=False)
    assert batched == reference
    assert {e[2]["run"] for e in reference[0] if e[2]["state"] == "firing"} == {sc.run, "other"}


def test_a_batch_takes_its_metric_names_once(monkeypatch):
    """The fast path is taken: most plain rows reach the detectors with the batch's names, vouched."""
    sc = Scenario(last_step=3000)
    samples = with_throughput(plain(sc.build()))
    taken = {"vouched": 0, "not": 0}
    feed_segment = segment.feed_segment

    def counting(rr, samples, i, j, evaluate, observe, names=None):
        taken["vouched" if names is not None else "not"] += j - i
        return feed_segment(rr, samples, i, j, evaluate, observe, names)

    monkeypatch.setattr("monitor.engine.evaluator.feed_segment", counting)
    r = Replayer(hero())
    for s in samples:
        r.feed(s)
    r.finish(sc.end)
    assert taken["vouched"] > 0.9 * len(samples) and taken["not"] == 0, taken
