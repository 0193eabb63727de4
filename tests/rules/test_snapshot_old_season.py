"""The slowdown rule's cycle history (``Season``) counts its values that are not 0, so that a flat history
(a fixed cadence timed in whole seconds) is told without a pass over it each bucket. A snapshot written
before the count was kept reads back, and the restored detector goes on exactly as one that never
restarted (the count is taken again when first needed)."""

from __future__ import annotations

import json
import random

import pytest

from monitor.rules.slowdown import SlowdownDetector
from monitor.samples import Sample
from tests.rules.helpers_rules import T0, rule


def _times(jitter: float, steps: int = 4 * 3600) -> list[float]:
    """1 s a step (exactly, or jittered), 10% slower from two thirds of the way on."""
    rng, t, out = random.Random(7), 0.0, []
    for i in range(steps):
        out.append(t)
        dt = 1.0 + (jitter * rng.gauss(0.0, 1.0) if jitter else 0.0)
        t += dt * (1.1 if i >= steps * 2 // 3 else 1.0)
    return out


@pytest.mark.parametrize("jitter", [0.0, 0.03])
def test_a_season_snapshot_without_the_count_reads_back_and_goes_on_alike(jitter):
    times = _times(jitter)
    cut = len(times) // 2
    kept, old = SlowdownDetector(rule(kind="slowdown"), "r"), SlowdownDetector(rule(kind="slowdown"), "r")
    seen: dict[int, list] = {id(kept): [], id(old): []}
    for i, t in enumerate(times):
        s = Sample(T0 + t, "r", i, {})
        if i == cut:
            saved = json.loads(json.dumps(kept.export_state()))
            season = saved["state"]["season"]["a"]
            assert season.pop("nonzero") == kept.season.nonzero  # the form before: no count
            assert old.import_state(saved) and old.season.nonzero is None
        for d in (kept, old) if i >= cut else (kept,):
            d.observe(s)
            f = d.evaluate(s.t)
            seen[id(d)].append((d.hot, f.active, f.value, f.reason, f.onset))
    assert seen[id(old)] == seen[id(kept)][cut:]
    assert old.season.nonzero == kept.season.nonzero == sum(1 for x in kept.season.xs if x)
    assert (kept.season.nonzero == 0) is (jitter == 0.0)  # whole seconds: every bucket's value is 0
    assert any(active for _, active, *_ in seen[id(kept)])  # the slowdown pages
