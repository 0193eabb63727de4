"""The ``slowdown`` rule's buckets sized in steps (monitor/rules/slowdown_width.py): a fast run's are
narrower than ``bucket`` (about 30 steps, at least a minute), a slow run's keep it, and a detector
restored from its snapshot goes on with the width it decided (issue 39)."""

from __future__ import annotations

import json

import pytest

from monitor.rules.slowdown import SlowdownDetector
from monitor.samples import Sample
from tests.rules.helpers_rules import T0, rule
from tests.rules.real_scenarios import pai_jitter


def _clock(dt: float, n: int, slow_from: int, factor: float = 1.05) -> list[float]:
    """The times of n steps at dt a step with the real jitter, factor slower from step slow_from on."""
    jitter, t, out = pai_jitter(), 0.0, []
    for i in range(n):
        out.append(t)
        t += dt * jitter[i % len(jitter)] * (factor if i >= slow_from else 1.0)
    return out


@pytest.mark.parametrize(("dt", "width"), [(1.0, 60.0), (2.0, 60.0), (5.0, 150.0), (20.0, 300.0)])
def test_the_bucket_spans_about_30_steps_between_a_minute_and_the_configured_bucket(dt, width):
    det = SlowdownDetector(rule(kind="slowdown"), "r")
    for i, t in enumerate(_clock(dt, int(900 / dt), 10**9)):
        det.observe(Sample(T0 + t, "r", i, {}, "running"))
    assert det._width == pytest.approx(width, rel=0.05)


def test_a_restored_detector_keeps_its_width_and_pages_the_slowdown_as_the_original():
    dt, onset = 2.0, 5 * 1800  # 5 hours at 2 s a step, then 5% slower
    clock = _clock(dt, onset + 1800, onset)
    det = SlowdownDetector(rule(kind="slowdown"), "r")
    for i in range(onset - 600):
        det.observe(Sample(T0 + clock[i], "r", i, {}, "running"))
    again = SlowdownDetector(rule(kind="slowdown"), "r")
    assert again.import_state(json.loads(json.dumps(det.export_state())))
    assert again._width == det._width < 300
    fired = {}
    for name, d in (("original", det), ("restored", again)):
        for i in range(onset - 600, len(clock)):
            d.observe(Sample(T0 + clock[i], "r", i, {}, "running"))
            if d.evaluate(T0 + clock[i]).active:
                fired[name] = i
                break
    assert fired["original"] == fired["restored"]
    assert 0 <= clock[fired["original"]] - clock[onset] <= 15 * 60
