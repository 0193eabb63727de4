"""Detection at the run's cadence (issue 39, point 1): the same incident shapes at 1 s, 20 s and 100 s
a step (hero_run: real llm.c values, real PAI step-time jitter, BLOOM's save and eval schedule scaled),
replayed through the hero pack, judged against what on-call needs (the issue's targets, not the
rules' constants), and a healthy run with saves, evals and a restart with a rewind at each cadence."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from monitor.traces.replay import replay
from tests.rules.cadence_scenarios import eval_pause, eval_step_after, hero_run, onset_step
from tests.rules.helpers_rules import T0, hero
from tests.rules.real_scenarios import step_change

MIN = 60.0
CADENCES = (1.0, 20.0, 100.0)


def first(result, rules: tuple[str, ...], after: float):  # noqa: ANN001, ANN201
    return next((e for e in result.firing() if e.rule in rules and e.t >= after), None)


@pytest.mark.parametrize("dt", CADENCES)
def test_a_hang_at_an_ordinary_step_pages_once_within_15_minutes_of_the_step_it_missed(dt):
    sc = hero_run(dt, hang_after_step=onset_step(dt), watch_after=2 * 3600)
    result = replay(sc.build(), hero(), end=sc.end)
    hit = first(result, ("progress_stalled",), sc.last_t)
    assert hit is not None and hit.t - sc.last_t <= 2 * dt + 15 * MIN, hit
    assert [e.rule for e in result.pages()] == ["progress_stalled"]  # one incident, one page


@pytest.mark.parametrize("dt", CADENCES)
def test_a_hang_at_an_eval_step_pages_within_15_minutes_of_when_the_eval_would_have_ended(dt):
    sc = hero_run(dt, hang_after_step=eval_step_after(dt), watch_after=3 * 3600)
    result = replay(sc.build(), hero(), end=sc.end)
    hit = first(result, ("progress_stalled",), sc.last_t)
    usual_end = sc.last_t + 1.5 * eval_pause(dt)  # the eval's length varies with the real jitter
    assert hit is not None and hit.t <= usual_end + 15 * MIN, hit
    assert len(result.pages()) == 1


@pytest.mark.parametrize(
    ("dt", "budget"), [(1.0, 3 * MIN), (2.0, 3 * MIN), (20.0, 30 * MIN), (100.0, 30 * MIN)]
)
def test_a_divergence_pages_within_30_minutes_at_a_slow_cadence(dt, budget):
    """The issue's shape: the loss climbing by 5 over 50 steps (BLOOM-like 6.4 -> 11.4)."""
    on = onset_step(dt)
    sc = hero_run(dt, loss_shift=lambda s: 5.0 * min(1.0, (s - on) / 50) if s >= on else 0.0)
    result = replay(sc.build(), hero(), end=sc.end)
    onset = sc.step_at[on]
    hit = first(result, ("loss_spike", "loss_diverging"), onset)
    assert hit is not None and hit.t - onset <= budget, hit
    assert all(e.t >= onset for e in result.pages()) and len(result.pages()) == 1


@pytest.mark.parametrize("factor", [1.05, 1.056])
@pytest.mark.parametrize(
    ("dt", "budget"), [(1.0, 15 * MIN), (2.0, 15 * MIN), (20.0, 60 * MIN), (100.0, 60 * MIN)]
)
def test_a_slowdown_of_5_percent_or_more_that_stays_pages_within_budget_and_once(dt, budget, factor):
    probe = hero_run(dt)
    probe.build()
    at = probe.step_at[onset_step(dt)] - T0
    sc = hero_run(dt, slow=step_change(at, factor))
    result = replay(sc.build(), hero(), end=sc.end)
    hit = first(result, ("throughput_slowdown",), T0 + at)
    assert hit is not None and hit.t - (T0 + at) <= budget, hit
    assert [e.rule for e in result.pages()] == ["throughput_slowdown"]


@pytest.mark.parametrize("dt", CADENCES)
def test_a_one_step_loss_blip_is_an_event_never_a_page(dt):
    on = onset_step(dt)
    sc = hero_run(dt, loss_shift=lambda s: 3.0 if s == on else 0.0)
    result = replay(sc.build(), hero(), end=sc.end)
    assert any(e.rule == "loss_jump" and e.step == on for e in result.firing())
    assert result.pages() == []


BLOOM_SPIKE = (0.18, 0.02, 0.066, 1.32, 0.59, 0.46, 0.27)  # BLOOM-176B at 31216..31222, relative (real)


def bloom_spike(on: int, level: float) -> Callable[[int], float]:
    """BLOOM-176B's real loss spike at iteration 31219 (../shared/data/real: 2.20 -> 5.10, back at 2.22
    about 30 iterations later; the log elides 31223..31249, taken as a straight decay), at this loss."""

    def shift(s: int) -> float:
        k = s - on
        if 0 <= k < len(BLOOM_SPIKE):
            return level * BLOOM_SPIKE[k]
        if len(BLOOM_SPIKE) <= k < 34:
            return level * BLOOM_SPIKE[-1] * (34 - k) / (34 - len(BLOOM_SPIKE) + 1)
        return 0.0

    return shift


@pytest.mark.parametrize("dt", (1.0, 2.0))
def test_a_real_loss_spike_that_recovers_in_30_steps_is_no_page_at_a_fast_cadence(dt):
    """At 1-2 s a step 30 steps are a minute: waiting for 64 steps in a row still pages a divergence
    within 3 minutes. (At 20 s a step and slower the same spike holds the loss up for over 5 minutes, and
    a divergence must page before 64 steps have passed: the loss staying up that long pages.)"""
    on = onset_step(dt)
    probe = hero_run(dt)
    rows = probe.build()
    level = next(r.metrics["train/loss"] for r in rows if r.step == on and "train/loss" in r.metrics)
    sc = hero_run(dt, loss_shift=bloom_spike(on, level))
    result = replay(sc.build(), hero(), end=sc.end)
    assert any(e.rule == "loss_jump" for e in result.firing())
    assert result.pages() == [], [(e.rule, e.reason) for e in result.pages()]


@pytest.mark.parametrize("dt", CADENCES)
def test_a_healthy_run_with_saves_evals_and_a_restart_with_a_rewind_pages_nothing(dt):
    sc = hero_run(dt, restarts=[(onset_step(dt) - 266, 15 * MIN)])
    result = replay(sc.build(), hero(), end=sc.end)
    assert result.pages() == [], [(e.rule, e.reason) for e in result.pages()]
