"""A policy collapse at the run's cadence (issue 39, point 4): the rl pack pages a collapse within 5 RL
steps or 10 minutes of its onset, whichever is longer, at an RL step every 10 s to every 10 minutes,
and a healthy run at the same cadence pages nothing, including one whose reward dips for a few
batches in a row now and then (the evidence in steps is learned from the run's own noise). The
finding says when the collapse began (``Finding.onset``/``onset_step``)."""

from __future__ import annotations

import random

import pytest

from monitor.rules.loader import load_pack
from monitor.rules.spike import SpikeDetector
from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.rules import rl_curves as rc

CADENCES = (10.0, 40.0, 120.0, 600.0)  # seconds an RL step
POLICY = {
    "rl_reward_collapse": rc.collapse,
    "rl_kl_blowup": rc.kl_blowup,
    "rl_entropy_collapse": rc.entropy_collapse,
}


def budget(step_seconds: float) -> float:
    return max(5 * step_seconds, 10 * 60.0)


def first_firing(samples: list[Sample]) -> dict[str, float]:
    out: dict[str, float] = {}
    for e in replay(samples, load_pack("rl")).firing():
        out.setdefault(e.rule, e.t)
    return out


def steps_of(step_seconds: float) -> tuple[int, int]:
    """Steps of the run (at least 4 hours and 120 steps of healthy training first), the onset step."""
    start = max(120, int(4 * 3600 / step_seconds))
    return start + max(20, int(3600 / step_seconds)), start


@pytest.mark.parametrize("rule", sorted(POLICY))
@pytest.mark.parametrize("dt", CADENCES)
@pytest.mark.parametrize("seed", range(3))
def test_a_policy_collapse_pages_within_5_rl_steps_or_10_minutes(rule: str, dt: float, seed: int) -> None:
    n, start = steps_of(dt)
    samples = rc.run(seed, n, rc.from_step(start, POLICY[rule]), step_seconds=dt)
    got = first_firing(samples)
    onset = samples[start].t
    assert rule in got, got
    assert onset <= got[rule] <= onset + budget(dt), (got[rule] - onset) / dt
    assert all(t >= onset for t in got.values()), "nothing before the collapse"


@pytest.mark.parametrize("dt", CADENCES)
@pytest.mark.parametrize("seed", range(6))
def test_a_healthy_rl_run_pages_nothing_at_any_cadence(dt: float, seed: int) -> None:
    n, _ = steps_of(dt)
    assert first_firing(rc.run(seed, n, step_seconds=dt)) == {}


def dipping(start: int, collapse_at: int | None = None) -> rc.Incident:
    """A healthy run whose reward falls as low as a collapse for 2 batches in a row every 40 steps (a
    bad data shard, a verifier timing out and scoring zeros) and comes back by itself, then once for 3
    batches (60 steps before ``start``); and a real collapse from ``collapse_at``."""

    def incident(i: int, m: dict[str, float], rng: random.Random, s: rc.Shape) -> None:
        two = 150 < i < start - 100 and i % 40 < 2
        if two or start - 60 <= i < start - 57 or collapse_at is not None and i >= collapse_at:
            rc.collapse(m, rng, s)

    return incident


@pytest.mark.parametrize("dt", (10.0, 120.0))
def test_a_run_whose_reward_dips_for_a_few_batches_now_and_then_learns_it_is_noise(dt: float) -> None:
    """Dips of 2 batches teach the rule this run's noise: a dip of 3 (what pages a run that never
    dipped) pages nothing, and a collapse pages once it has lasted twice the longest dip (4 batches)."""
    n, start = 440, 400  # ten dips of 2 before the dip of 3
    assert first_firing(rc.run(4, n, dipping(start), step_seconds=dt)) == {}
    got = first_firing(rc.run(4, n, dipping(start, collapse_at=start), step_seconds=dt))
    onset = rc.T0 + start * dt
    assert set(got) == {"rl_reward_collapse"}, got
    assert onset + 3 * dt <= got["rl_reward_collapse"] <= onset + budget(dt)


def test_the_finding_says_when_the_collapse_began() -> None:
    spec = next(r for r in load_pack("rl") if r.name == "rl_reward_collapse")
    det = SpikeDetector(spec, "rl")
    n, start = steps_of(120.0)
    samples = rc.run(1, start + 4, rc.from_step(start, rc.collapse), step_seconds=120.0)
    for s in samples:
        det.observe(s)
    f = det.evaluate(samples[-1].t)
    assert f.active and f.onset == samples[start].t and f.onset_step == start, f
    assert "for 4 steps, 6m" in f.reason, f.reason


def everything_collapses(m: dict[str, float], rng: random.Random, s: rc.Shape) -> None:
    """A policy collapse as it shows: the reward falls, KL to the reference explodes, entropy falls."""
    rc.collapse(m, rng, s)
    rc.kl_blowup(m, rng, s)
    rc.entropy_collapse(m, rng, s)


@pytest.mark.parametrize("dt", (10.0, 120.0))
def test_a_collapse_seen_by_reward_kl_and_entropy_is_one_page(dt: float) -> None:
    """Three rules see one collapse: the first to fire pages, the others join its message (one incident,
    one page: the rl pack gives them one ``symptom``)."""
    n, start = steps_of(dt)
    samples = rc.run(1, n, rc.from_step(start, everything_collapses), step_seconds=dt)
    result = replay(samples, load_pack("rl"))
    fired = {e.rule for e in result.firing()}
    assert {"rl_reward_collapse", "rl_kl_blowup", "rl_entropy_collapse"} <= fired, fired
    assert len(result.pages()) == 1, [(e.rule, e.t) for e in result.pages()]
