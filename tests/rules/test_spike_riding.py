"""A point spike rule shares the baseline of a floor rule of another ``floor_steps`` (the hero pack's
loss_jump and loss_spike) until that floor is first raised, then goes on with a copy of its own: each
rule finds exactly what it finds alone (its own baseline, as before they shared), batched and sample
by sample, and after a restart from the rule state's snapshot taken before, at or after the split."""

from __future__ import annotations

import json

import pytest

from monitor.engine.run_rules import RunRules
from monitor.samples import Sample
from monitor.traces.replay import Replayer
from tests.rules.helpers_rules import hero, rule
from tests.rules.real_scenarios import Scenario
from tests.rules.test_replay_batched import plain

JUMP = Scenario(loss_shift=lambda step: 1.0 if 4000 <= step < 4400 else 0.0, last_step=6000)
TRACES = {
    "loss jump": lambda: JUMP,
    "two jumps and a rewind": lambda: Scenario(
        loss_shift=lambda step: 0.8 if 3000 <= step < 3300 or 4500 <= step < 4700 else 0.0,
        restarts=[(4000, 300.0)],
        last_step=6000,
    ),
}


def groups() -> list[list]:
    """The rules, in the groups that shared a baseline before (the same ``floor_steps``): what each
    group finds on its own is what it must find beside the others."""
    by_name = {r.name: r for r in hero()}
    return [
        [by_name["loss_spike"]],  # floor, floor_steps 64
        [by_name["loss_jump"]],  # point, no floor_steps: rides loss_spike's baseline until it is raised
        [  # floor_steps 8: a baseline of their own (a floor rule never rides), frozen by its floor
            rule(name="loss_floor_8", kind="spike", metric="train/loss", floor_steps=8),
            rule(
                name="loss_jump_8",
                kind="spike",
                metric="train/loss",
                mode="point",
                floor_steps=8,
                severity="info",
            ),
        ],
    ]


def spike_rules() -> list:
    return [spec for group in groups() for spec in group]


def replay(rules: list, samples: list[Sample], end: float, batched: bool) -> tuple[list, dict]:
    r = Replayer(rules, batched=batched)
    for s in samples:
        r.feed(s)
    events = r.finish(end)
    stats = {run: summary.stats for run, summary in r.summaries.items()}
    return sorted((e.t, e.fingerprint, json.dumps(e.to_json(), sort_keys=True)) for e in events), stats


@pytest.mark.parametrize("trace", sorted(TRACES))
@pytest.mark.parametrize("batched", [True, False])
def test_each_rule_finds_what_it_finds_alone(trace, batched):
    sc = TRACES[trace]()
    samples = plain(sc.build())
    rules = spike_rules()
    together, stats = replay(rules, samples, sc.end, batched)
    alone: list = []
    for group in groups():
        events, own = replay(group, samples, sc.end, batched)
        alone += events
        for run, figures in own.items():
            for spec in group:
                assert stats[run][spec.name] == figures[spec.name], spec.name
    assert together == sorted(alone)
    fired = {json.loads(e[2])["rule"] for e in together if json.loads(e[2])["state"] == "firing"}
    assert {"loss_spike", "loss_jump"} <= fired, fired  # the floor was raised: the rider split off


def test_the_rider_shares_until_the_floor_is_raised_then_has_its_own():
    rr = RunRules.build(spike_rules(), "r")
    spike, jump, floor8, jump8 = (slot.det for slot in rr.slots)
    assert jump.baseline is spike.baseline and jump8.baseline is floor8.baseline
    assert floor8.baseline is not spike.baseline
    split_at = None
    for s in plain(JUMP.build()):
        for slot in rr.plan(tuple(s.metrics)):
            slot.det.observe(s)
        if split_at is None and jump.baseline is not spike.baseline:
            split_at = s.step
            assert spike.baseline.floor_raised and not jump.baseline.floor_raised
    assert split_at is not None and 4000 <= split_at < 4400, split_at


def feed(rr: RunRules, samples: list[Sample], names: list[str]) -> list[tuple]:
    """Sample by sample through the run's plan, each named rule evaluated at every sample."""
    seen = []
    for s in samples:
        for slot in rr.plan(tuple(s.metrics)):
            slot.det.observe(s)
        for slot in rr.slots:
            if slot.rule.name in names:
                f = slot.det.evaluate(s.t)
                seen.append((s.t, slot.rule.name, slot.det.hot, f.active, f.value, f.reason))
    return seen


@pytest.mark.parametrize("cut_step", [2000, 4030, 4100, 5000])
def test_a_restart_from_the_snapshot_goes_on_as_alone(cut_step):
    samples = plain(JUMP.build())
    rules = spike_rules()
    names = [r.name for r in rules]
    cut = next(i for i, s in enumerate(samples) if s.step is not None and s.step >= cut_step)
    rr = RunRules.build(rules, "r")
    first = feed(rr, samples[:cut], names)
    snap = json.loads(json.dumps(rr.export_state()))
    restored = RunRules.build(rules, "r")
    assert restored.import_state(snap) == len(rules)
    split = rr.slots[1].det.baseline is not rr.slots[0].det.baseline
    assert (restored.slots[1].det.baseline is not restored.slots[0].det.baseline) == split
    assert split == (cut_step > 4030), "the floor is raised about 60 steps into the jump"
    resumed = first + feed(restored, samples[cut:], names)
    expected: list = []
    for group in groups():
        expected += feed(RunRules.build(group, "r"), samples, [spec.name for spec in group])
    assert sorted(resumed, key=repr) == sorted(expected, key=repr)
