"""``slowdown`` on the real llm.c log with real step-time jitter (the PAI job's, real_scenarios.py): a
4% permanent slowdown warns within the hour, saying how large and since when; a +/-2% swing with a
4-hour cycle and the benign jitter stay quiet."""

from __future__ import annotations

import json
import math
import re

import pytest

from monitor.rules.slowdown import SlowdownDetector
from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.rules.helpers_rules import T0, hero, rule
from tests.rules.real_scenarios import Scenario, step_change

HOUR = 3600.0
JITTER = {
    "steady": {"jitter_scale": 0.0},  # the llm.c log as is: no wall clock, a steady step time
    "calm": {"jitter_scale": 0.15},  # jitter of BLOOM-176B's size (about 0.5% a step)
    "pai": {},  # the PAI job's own jitter (about 5% a step)
}


def slowdown_events(sc: Scenario) -> list:
    result = replay(sc.build(), hero(), end=sc.end)
    return [e for e in result.events if e.rule == "throughput_slowdown"]


@pytest.mark.parametrize("at", [1.5, 3.0, 8.0])
@pytest.mark.parametrize("jitter", list(JITTER))
def test_a_4_percent_slowdown_warns_within_the_hour_with_its_size_and_start(jitter, at):
    sc = Scenario(slow=step_change(at * HOUR, 1 / 0.96), **JITTER[jitter])  # one slow host: -4% tokens/s
    events = slowdown_events(sc)
    firing = [e for e in events if e.state == "firing"]
    assert firing, events
    first = firing[0]
    assert T0 + at * HOUR < first.t <= T0 + (at + 1) * HOUR, (first.t - T0) / HOUR
    assert first.severity == "warning"
    size, began = re.search(r"step time \+(\d+\.\d)% .* since step (\d+)", first.reason).groups()
    assert 3.0 <= float(size) <= 6.0, first.reason
    assert abs(sc.step_at[int(began)] - (T0 + at * HOUR)) <= 15 * 60, first.reason
    assert len(firing) == 1 and events[-1].state == "firing"  # a host that stays slow keeps it up


@pytest.mark.parametrize("phase", [0, 1, 2, 3])
@pytest.mark.parametrize("jitter", list(JITTER))
def test_a_2_percent_swing_over_4_hours_stays_quiet(jitter, phase):
    def swing(x: float) -> float:
        return 1 + 0.02 * math.sin(2 * math.pi * x / (4 * HOUR) + phase * math.pi / 2)

    assert slowdown_events(Scenario(slow=swing, **JITTER[jitter])) == []


@pytest.mark.parametrize("variant", [{}, {"jitter_hold": 10}, {"jitter_offset": 150}, {"step_time": 10.0}])
def test_the_real_jitter_with_saves_and_evals_stays_quiet(variant):
    assert slowdown_events(Scenario(**variant)) == []


# ---- the detector -------------------------------------------------------------------------------
def rows(times: list[float], start_step: int = 0) -> list[Sample]:
    return [Sample(T0 + t, "r", start_step + i, {}, "running") for i, t in enumerate(times)]


def steady(n: int, step: float, t0: float = 0.0) -> list[float]:
    return [t0 + i * step for i in range(n)]


def det(**params: object) -> SlowdownDetector:
    return SlowdownDetector(rule(kind="slowdown", **params), "r")


def test_it_cannot_tell_while_learning_then_fires_resolves_and_restarts_afresh():
    d = det()
    times = steady(9000, 1.0)  # 2.5 hours at 1 s a step
    for s in rows(times[:3000]):
        d.observe(s)
    f = d.evaluate(T0 + 3000)
    assert f.unknown and not f.active and "learning" in f.reason
    for s in rows(times[3000:], 3000):
        d.observe(s)
    assert d.mu is not None and not d.evaluate(T0 + times[-1]).unknown
    slow = steady(4000, 1.1, times[-1] + 1.1)  # 10% slower
    for s in rows(slow, 9000):
        d.observe(s)
    f = d.evaluate(T0 + slow[-1])
    assert f.active and "+10.0%" in f.reason and f.value == pytest.approx(0.1, abs=0.01)
    base = d.mu
    more = steady(2000, 1.1, slow[-1] + 1.1)
    for s in rows(more, 13000):
        d.observe(s)
    assert d.evaluate(T0 + more[-1]).active and d.mu == base  # frozen while it fires
    fast = steady(3000, 1.0, more[-1] + 1.0)
    for s in rows(fast, 15000):
        d.observe(s)
    assert not d.evaluate(T0 + fast[-1]).active
    # it came back by itself: the run's own swing, learned (its buckets join the baseline, and as much
    # evidence again does not fire)
    assert d.mu > base and d.threshold() >= d.swing > 0
    d.observe(Sample(T0 + fast[-1] + 10, "r", 5, {}, "running"))  # a rewind: restarted
    assert d.evaluate(T0 + fast[-1] + 10).unknown and d.resets == 1


def test_a_throughput_metric_where_lower_is_slower():
    d = det(metric="throughput/tokens_per_second", worse="lower")
    for i in range(3 * 3600):
        v = 4e5 if i < 2 * 3600 else 3.8e5  # -5%
        d.observe(Sample(T0 + i, "r", i, {"throughput/tokens_per_second": v}))
    f = d.evaluate(T0 + 3 * 3600)
    assert f.active and "throughput/tokens_per_second -5.0% (3.8e+05 against 4e+05)" in f.reason


def test_pauses_are_not_step_times():
    d = det()
    times, t = [], 0.0
    for i in range(6000):
        times.append(t)
        t += 1.0 + (360.0 if i % 500 == 499 else 0.0)  # a 6-minute save every 500 steps
    for s in rows(times):
        d.observe(s)
    assert not d.evaluate(T0 + t).active and math.exp(d.mu) == pytest.approx(1.0)


def test_the_state_is_bounded_plain_data():
    d = det()
    for s in rows(steady(20000, 1.0)):
        d.observe(s)
    assert len(d.base) <= d.cap and len(d.base_n) <= d.cap and len(d.values) < 400
    assert len(d.season.pos) == len(d.season.xs) == len(d.season.ws) <= d.season.cap
    json.dumps(d.export_state())


def test_the_open_bucket_is_judged_for_its_evidence_so_far():
    """A 10% slowdown needs a little over one bucket of evidence: it fires about 5 minutes in, not when
    the second 5-minute bucket after it closes (10 minutes)."""
    d = det()
    times = steady(3 * 3600, 1.0)
    for s in rows(times):
        d.observe(s)
    onset = times[-1]
    slow = steady(15 * 60, 1.1, onset + 1.1)
    fired = next((t for i, t in enumerate(slow) if _fires(d, T0 + t, 3 * 3600 + i)), None)
    assert fired is not None and fired - onset <= 7 * 60, fired and (fired - onset) / 60
    assert "+10.0%" in d.evaluate(T0 + fired).reason


def _fires(d: SlowdownDetector, t: float, step: int) -> bool:
    d.observe(Sample(t, "r", step, {}, "running"))
    return d.evaluate(t).active


def test_a_swing_the_run_came_back_from_by_itself_is_not_paged_again():
    """The first 10% swing of 40 minutes fires (nothing in the baseline says the run does that); the run
    comes back by itself, and a swing no larger three hours later (35 minutes) is its own behaviour: no
    second alert. (A swing larger than any it came back from fires.)"""
    d = det()
    t, step, fired = 0.0, 0, []
    for length, dt in [(3 * 3600, 1.0), (2400, 1.1), (3 * 3600, 1.0), (2100, 1.1), (3600, 1.0)]:
        end, was = t + length, d.firing
        while t < end:
            d.observe(Sample(T0 + t, "r", step, {}, "running"))
            t, step = t + dt, step + 1
            if d.firing and not was:
                fired.append(t)
            was = d.firing
    assert len(fired) == 1 and 3 * 3600 < fired[0] < 3 * 3600 + 2400, fired
    assert not d.firing and d.swing > 0
