"""Replay: each run's simulated clock ticks at its samples and on the evaluation grid, and runs on to
the end of the trace, so time-based rules fire when they would have live."""

from __future__ import annotations

import random

import pytest

from monitor.samples import Sample
from monitor.traces.replay import Replayer, replay
from tests.rules.helpers_rules import T0, hero, steps, with_grad_norm

MIN = 60.0


def test_a_stall_fires_at_the_right_time_between_samples():
    rows = steps([2.0] * 30, every=10.0)  # last step at 290s
    rows += [Sample(T0 + 290 + i * 300, "r", state="running") for i in range(1, 8)]  # only state reports
    events = [e for e in replay(rows, hero()).events if e.rule == "progress_stalled"]
    assert [(e.state, e.step) for e in events] == [("firing", 29)]
    assert T0 + 290 + 900 < events[0].t <= T0 + 290 + 900 + 15  # on the next 15s tick after the limit


def test_a_run_that_goes_silent_while_others_go_on_is_caught():
    quiet = with_grad_norm(steps([2.0] * 30, every=10.0, run="quiet"))
    busy = with_grad_norm(steps([2.0] * 400, every=10.0, run="busy"))
    result = replay(sorted(quiet + busy, key=lambda s: s.t), hero())
    by_run = {(e.run, e.rule) for e in result.firing()}
    assert by_run == {("quiet", "progress_stalled")}  # one hang, one page
    stall = next(e for e in result.firing() if e.rule == "progress_stalled")
    assert T0 + 290 + 900 < stall.t <= T0 + 290 + 915 and len(result.pages()) == 1
    assert result.summaries["quiet"].samples == 30 and result.summaries["busy"].last_step == 399


def test_lines_unordered_across_runs_give_the_same_events():
    a = with_grad_norm(steps([2.0] * 100 + [float("nan")] + [2.0] * 20, every=10.0, run="a"))
    b = with_grad_norm(steps([2.0] * 50, every=20.0, run="b")) + [Sample(T0 + 1000, "b", state="failed")]
    ordered = sorted(a + b, key=lambda s: s.t)
    shuffled = a[:40] + b + a[40:]  # each run still in time order
    key = [(e.t, e.run, e.rule, e.state) for e in replay(ordered, hero()).events]
    assert key == [(e.t, e.run, e.rule, e.state) for e in replay(shuffled, hero()).events]
    assert {(r, rule) for _, r, rule, s in key if s == "firing"} == {
        ("a", "loss_nonfinite"),
        ("b", "run_crashed"),
    }


def test_samples_of_one_time_are_evaluated_together():
    rows = [Sample(T0, "r", 1, {"train/loss": float("nan")}), Sample(T0, "r", 1, {"train/loss": 2.0})]
    assert replay(rows, hero()).events == []  # at T0 the loss is 2.0: nothing to see


def test_a_run_going_back_in_time_is_refused():
    r = Replayer(hero())
    r.feed(Sample(T0 + 10, "r"))
    with pytest.raises(ValueError, match="back in time"):
        r.feed(Sample(T0, "r"))
    with pytest.raises(ValueError, match="positive"):
        Replayer(hero(), interval=0)


def test_events_carry_the_jsonl_fields():
    rows = with_grad_norm(steps([2.0] * 20 + [float("inf")], every=10.0))
    (event,) = [e for e in replay(rows, hero()).events if e.state == "firing"]
    doc = event.to_json()
    assert {k: doc[k] for k in ("run", "rule", "kind", "metric", "severity", "state", "step", "value")} == {
        "run": "r",
        "rule": "loss_nonfinite",
        "kind": "non_finite",
        "metric": "train/loss",
        "severity": "critical",
        "state": "firing",
        "step": 20,
        "value": "Infinity",
    }
    assert doc["t"] == T0 + 200 and doc["summary"] == "r: train/loss is Inf at step 20"


def test_time_based_rules_fire_on_the_evaluation_grid_up_to_the_end():
    rng = random.Random(3)
    rows = steps([2.0 + 0.01 * rng.random() for _ in range(60)], every=10.0)
    fine = [e for e in replay(rows, hero(), interval=15).firing() if e.rule == "progress_stalled"]
    coarse = [
        e for e in replay(rows, hero(), interval=300, end=T0 + 3600).firing() if e.rule == "progress_stalled"
    ]
    assert fine == [] and len(coarse) == 1 and coarse[0].t % 300 == 0


def test_a_source_outage_in_a_trace_pages_the_source_not_the_run_and_clears_when_rows_return():
    """Rows from W&B, then 40 minutes of errors (no step, longer than the stall limit), then rows again:
    replay says the source was unavailable and then back, and never that the run stalled."""

    def row(i: int, t: float) -> Sample:
        loss = 3.0 - 0.001 * i
        state = "running" if i == 0 else None  # the state once, then plain rows: the common case
        return Sample(t, "r", i, {"train/loss": loss, "grad/norm/total": 0.5}, state, "wandb")

    before = [row(i, T0 + 10 * i) for i in range(180)]  # 30 minutes
    down = T0 + 1800
    errors = [Sample(down + 15 * k, "r", source="wandb", source_error="HTTP 503") for k in range(160)]
    back = down + 2400
    after = [row(180 + i, back + 10 * i) for i in range(120)]
    events = replay(before + errors + after, hero()).events

    source = [(e.state, e.t) for e in events if e.rule == "source_unavailable" and e.state != "pending"]
    assert [state for state, _ in source] == ["firing", "resolved"]
    # the outage ends once the source has answered cleanly for a while (as long as it failed, <= 10 min)
    assert down < source[0][1] < back + 600 <= source[1][1] < back + 600 + 60
    assert not [e for e in events if e.rule == "progress_stalled" and e.state == "firing"]
