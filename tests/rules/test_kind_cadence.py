"""Each step-driven rule kind at the run's cadence (issue 39, "what proves it"): the same incident shape,
counted in steps, at 1 s, 20 s and 100 s a step, on the hero runs of cadence_scenarios.py (the llm.c
run's real values, the PAI job's real step-time jitter, BLOOM-176B's saves and evals scaled), replayed
through the hero pack. Each incident pages (or, for a warning that joins another, fires) within a budget
that grows with the step time as on-call would allow it (minutes at a fast cadence, a few steps more at a
slow one), and a healthy run logging every input these kinds read (grad norm, skipped steps, tokens/s,
eval loss, the OOM and restart counters) through its saves, evals and a restart pages nothing.

stall, trend, spike and slowdown are in test_cadence.py; the RL kinds (flatline among them) in
test_rl_cadence.py. Not here as incidents: straggler and the OOM counter (Prometheus's scrape sets
their pace, not the step; the OOM counter is in the healthy run), telemetry_gone and ended (a run that
sends nothing, or ends, has no cadence), job_alert (the job pushes it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.rules.cadence_scenarios import hero_run, onset_step
from tests.rules.helpers_rules import T0, hero
from tests.rules.real_scenarios import HUGGINGFACE, Scenario, as_trainer, step_change, with_tokens_per_second

MIN = 60.0
CADENCES = (1.0, 20.0, 100.0)
Change = Callable[[int, dict[str, float]], dict[str, float]]


def budget(dt: float, minutes: float, steps: int) -> float:
    """Minutes at a fast cadence; at a slow one, that many steps of evidence (whichever is longer)."""
    return max(minutes * MIN, steps * dt)


def full_rows(sc: Scenario, change: Change | None = None, eval_shift=None) -> list[Sample]:  # noqa: ANN001
    """The run's rows with every input the step-driven kinds read: its real grad norm, optim/skipped_step
    (0 on each step), tokens/s over each step's time, the real eval loss at the end of each eval, and the
    OOM and restart counters as Prometheus would give them each minute. ``change(step, metrics)`` alters
    a row's metrics (the incident)."""
    rows = with_tokens_per_second(sc.build(), max_gap=3 * sc.step_time + 10)
    out: list[Sample] = []
    for s in rows:
        if s.step is not None and "train/loss" in s.metrics:
            metrics = {**s.metrics, "optim/skipped_step": 0.0}
            if change is not None:
                metrics = change(s.step, metrics)
            s = Sample(s.t, s.run, s.step, metrics, s.state, s.source)
        out.append(s)
    out = as_trainer(sc, out, {k: k for k in HUGGINGFACE}, eval_shift=eval_shift)
    scrapes = [
        Sample(
            t,
            sc.run,
            metrics={"oom_kills_total": 0.0, "restarts_total": float(sum(r <= t for r in sc.restarted_at))},
            source="prometheus",
        )
        for t in _every(out[0].t, sc.end, 60.0)
    ]
    return sorted(out + scrapes, key=lambda s: s.t)


def _every(start: float, end: float, every: float) -> list[float]:
    return [start + k * every for k in range(int((end - start) // every) + 1)]


def from_onset(dt: float, fn: Change) -> Change:
    on = onset_step(dt)
    return lambda step, m: fn(step - on, m) if step >= on else m


def run(dt: float, change: Change | None = None, **kw: object) -> tuple[list, Scenario]:
    sc = hero_run(dt, **kw)
    rows = full_rows(sc, change)
    return replay(rows, hero(), end=sc.end), sc


def first(result, rule: str, after: float):  # noqa: ANN001, ANN201
    return next((e for e in result.firing() if e.rule == rule and e.t >= after), None)


def assert_caught(result, sc: Scenario, rule: str, limit: float, onset: float | None = None) -> float:  # noqa: ANN001
    onset = sc.step_at[onset_step(sc.step_time)] if onset is None else onset
    hit = first(result, rule, onset)
    assert hit is not None, [(e.rule, e.state, e.reason) for e in result.events if e.rule == rule][:5]
    took = hit.t - onset
    assert took <= limit, (rule, took / MIN, limit / MIN, hit.reason)
    assert result.pages() and all(e.t >= onset for e in result.pages()), "nothing pages before the onset"
    return took


@pytest.mark.parametrize("dt", CADENCES)
def test_a_nan_loss_pages_at_the_step_it_is_logged(dt):
    result, sc = run(dt, from_onset(dt, lambda k, m: {**m, "train/loss": float("nan")} if k == 0 else m))
    assert_caught(result, sc, "loss_nonfinite", 2 * MIN)
    assert len(result.pages()) == 1


@pytest.mark.parametrize("dt", CADENCES)
def test_grad_norms_that_stay_high_warn_within_minutes_or_20_steps(dt):
    result, sc = run(dt, from_onset(dt, lambda k, m: {**m, "grad/norm/total": 3.0}))
    assert_caught(result, sc, "grad_norm_high", budget(dt, 15, 20))
    assert [e.rule for e in result.pages()] == ["grad_norm_high"]


@pytest.mark.parametrize("dt", CADENCES)
def test_a_skipped_step_every_few_steps_warns_within_minutes_or_20_steps(dt):
    result, sc = run(dt, from_onset(dt, lambda k, m: {**m, "optim/skipped_step": float(k % 4 == 0)}))
    assert_caught(result, sc, "skipped_steps", budget(dt, 5, 20))
    assert [e.rule for e in result.pages()] == ["skipped_steps"]


@pytest.mark.parametrize("dt", CADENCES)
def test_a_loss_no_longer_logged_while_steps_go_on_warns_after_30_minutes(dt):
    last = onset_step(dt) + max(1500, int(3600 / dt))  # an hour of steps after it
    result, sc = run(
        dt, from_onset(dt, lambda k, m: {x: v for x, v in m.items() if x != "train/loss"}), last_step=last
    )
    assert_caught(result, sc, "loss_absent", 30 * MIN + 3 * dt + MIN)
    assert [e.rule for e in result.pages()] == ["loss_absent"]


@pytest.mark.parametrize("dt", CADENCES)
def test_an_eval_loss_worse_than_the_last_warns_when_it_is_logged(dt):
    sc = hero_run(dt)
    sc.build()
    on = onset_step(dt)
    evals = sorted(s for s in sc.pauses if s % 1000 == 0 and s > on)
    if not evals:
        pytest.fail("no eval after the onset")
    bad = evals[0]
    rows = full_rows(sc, eval_shift=lambda s: 0.2 if s == bad else 0.0)
    result = replay(rows, hero(), end=sc.end)
    logged = next(r.t for r in rows if r.step == bad and "eval/loss" in r.metrics)
    assert_caught(result, sc, "eval_loss_regressed", MIN, onset=logged)
    assert [e.rule for e in result.pages()] == ["eval_loss_regressed"]


@pytest.mark.parametrize("dt", CADENCES)
def test_a_12_percent_throughput_drop_is_seen_by_the_drop_rule_within_30_minutes_or_20_steps(dt):
    probe = hero_run(dt)
    probe.build()
    at = probe.step_at[onset_step(dt)]
    sc = hero_run(dt, slow=step_change(at - T0, 1 / 0.88))
    result = replay(full_rows(sc), hero(), end=sc.end)
    assert_caught(result, sc, "throughput_drop", budget(dt, 30, 20), onset=at)
    assert len(result.pages()) == 1  # one incident, one page (the slowdown and the drop join)


@pytest.mark.parametrize("dt", CADENCES)
def test_a_healthy_run_with_every_input_saves_evals_and_a_restart_pages_nothing(dt):
    result, _ = run(dt, restarts=[(onset_step(dt) - 266, 15 * MIN)])
    assert result.pages() == [], [(e.rule, e.reason) for e in result.pages()]


@pytest.mark.parametrize("dt", CADENCES)
def test_a_crash_loop_pages_once_at_its_third_restart_however_long_a_cycle_takes(dt):
    """The run dies 3 steps past its last save's step, again and again (5-minute restores): each cycle
    redoes the steps since the save (over an hour of them at 100 s a step, where onset_step is on a save
    step plus 66). The third restart without progress pages, once; each restart is counted once though
    both the W&B state and the restart counter tell it."""
    on = onset_step(dt) - 34
    sc = hero_run(dt, restarts=[(on, 5 * MIN)] * 4, last_step=on + 300)
    result = replay(full_rows(sc), hero(), end=sc.end)
    third = sc.restarted_at[2]
    hit = first(result, "crash_loop", sc.restarted_at[0])
    assert hit is not None and third - 2 * MIN <= hit.t <= third + MIN, (
        hit,
        [t - third for t in sc.restarted_at],
    )
    assert [e.rule for e in result.pages()] == ["crash_loop"]
