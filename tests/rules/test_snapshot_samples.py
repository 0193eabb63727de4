"""Detectors that keep the newest sample they judged (threshold, drop, flat-line, spike) survive a
restart through the rule state's snapshot: before, a ``Sample`` could not be snapshot, and they started
cold after every restart (warming up again, a raised floor forgotten)."""

from __future__ import annotations

import json

import pytest

from monitor.rules.base import DETECTORS
from monitor.rules.loader import load_pack
from monitor.samples import Sample
from tests.rules.real_scenarios import Scenario
from tests.rules.test_observe_many import with_throughput
from tests.rules.test_replay_batched import plain

NAMES = ["grad_norm_high", "throughput_drop", "loss_spike", "loss_jump"]
FLATLINE = "rl_reward_flatline"


@pytest.mark.parametrize("name", NAMES)
def test_a_restored_detector_goes_on_as_if_never_restarted(name):
    spec = {r.name: r for r in load_pack("hero")}[name]
    sc = Scenario(loss_shift=lambda step: 1.0 if 4000 <= step < 4400 else 0.0, last_step=6000)
    samples = with_throughput(plain(sc.build()))
    cut = next(i for i, s in enumerate(samples) if s.step is not None and s.step >= 4100)
    kind = DETECTORS[spec.kind]
    det, kept = kind(spec, "r"), kind(spec, "r")
    seen, again = [], []
    for k, s in enumerate(samples):
        if k == cut:
            saved = json.loads(json.dumps(det.export_state()))
            assert '"$p"' in json.dumps(saved)  # the newest sample is in it
            det = kind(spec, "r")
            assert det.import_state(saved)
            assert det.ready(s.t) == kept.ready(s.t)
        for d, out in ((det, seen), (kept, again)):
            d.observe(s)
            f = d.evaluate(s.t)
            out.append((d.hot, f.active, f.value, f.reason))
    assert seen == again
    if spec.kind == "spike":
        assert any(a for _, a, _, _ in again[cut:]) or name == "loss_jump"
        assert det.ready(samples[cut].t)  # warm after the restart, not warming up again


def test_a_flatline_detector_restores_its_newest_sample():
    spec = {r.name: r for r in load_pack("rl")}[FLATLINE]
    det = DETECTORS[spec.kind](spec, "r")
    for i in range(50):
        det.observe(Sample(1_700_000_000.0 + 60 * i, "r", i, {spec.metric: 0.5}))
    saved = json.loads(json.dumps(det.export_state()))
    again = DETECTORS[spec.kind](spec, "r")
    assert again.import_state(saved)
    now = 1_700_000_000.0 + 60 * 60
    assert again.evaluate(now) == det.evaluate(now)
    assert again.holds_until() == det.holds_until()
