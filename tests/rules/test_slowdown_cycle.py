"""A slowdown that stays, whatever the phase of the run's own step-time cycle it starts at, and after a
restart (issue 39). The hero run (real llm.c values, the PAI job's real jitter: ~170 steps 2-4% slow,
~130 about 5% fast, BLOOM's saves and evals scaled) with the jitter started at 12 points of its
300-step cycle (bench/slowdown_phases.py measures the same, for both 5% and 5.6%)."""

from __future__ import annotations

import json

import pytest

from bench.slowdown_phases import time_to_page
from monitor.rules.slowdown import SlowdownDetector
from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.rules.cadence_scenarios import PHASES, hero_run, onset_step
from tests.rules.helpers_rules import T0, hero, rule
from tests.rules.real_scenarios import pai_jitter, step_change

MIN = 60.0


# The budget: 60 minutes at 20 s and 100 s a step (held at every phase: 5.6-18.8 and 22.3-49.5
# min; before the cycle was modelled the worst phase paged after 105 and 384 min), 15 at 2 s (held:
# 6.2-9.4 min; with 5-minute buckets, 150 steps, half the cycle, 6.7-30.8: the buckets are now sized
# in steps, slowdown_width.py).
HOLDS = {2.0: 15 * MIN, 20.0: 60 * MIN, 100.0: 60 * MIN}


@pytest.mark.parametrize("dt", list(HOLDS))
def test_a_5_percent_slowdown_pages_at_every_phase_of_the_runs_own_cycle(dt):
    cycle = len(pai_jitter())
    slow = {}
    for offset in (k * cycle // PHASES for k in range(PHASES)):
        took, early = time_to_page(dt, offset, 1.05)
        assert early == 0, f"offset {offset}: {early} pages before the onset"
        if took is None or took * MIN > HOLDS[dt]:
            slow[offset] = took
    assert slow == {}, f"phases paged late or never (offset: minutes): {slow}"


@pytest.mark.parametrize("dt", (20.0, 100.0))
def test_after_a_restart_a_slowdown_pages_within_the_hour_not_after_a_new_baseline(dt):
    """A restart (a 15-minute restore, a rewind to the last save) and, an hour after the run is back, a
    5% slowdown that stays. Before, the baseline was learned afresh: 500 step times, 14 hours at 100 s
    a step, during which nothing could page."""
    restart = [(onset_step(dt) - 266, 900.0)]
    probe = hero_run(dt, restarts=restart)
    probe.build()
    at = probe.restarted_at[0] + 900.0 + 3600.0
    sc = hero_run(dt, restarts=restart, slow=step_change(at - T0, 1.05))
    result = replay(sc.build(), hero(), end=sc.end)
    assert all(e.t >= at for e in result.pages()), "a page before the slowdown"
    hit = next((e for e in result.firing() if e.rule == "throughput_slowdown" and e.t >= at), None)
    assert hit is not None and hit.t - at <= 60 * MIN, hit and (hit.t - at) / MIN


def _run(det: SlowdownDetector, t: float, step: int, n: int, dt: float) -> tuple[float, int]:
    for _ in range(n):
        det.observe(Sample(T0 + t, "r", step, {}, "running"))
        t, step = t + dt, step + 1
    return t, step


def _restart(det: SlowdownDetector, t: float, step: int, rewind: int) -> tuple[float, int]:
    det.observe(Sample(T0 + t + 30, "r", state="crashed"))
    det.observe(Sample(T0 + t + 600, "r", state="running"))
    return t + 600, step - rewind


def test_a_restart_at_the_old_speed_keeps_the_baseline_and_another_speed_learns_it_afresh():
    det = SlowdownDetector(rule(kind="slowdown"), "r")
    t, step = _run(det, 0.0, 0, 4 * 3600, 1.0)
    base = det.mu
    assert base is not None
    t, step = _restart(det, t, step, 300)
    assert det.evaluate(T0 + t).unknown  # checking the new steps first
    t, step = _run(det, t, step, 30 * 60, 1.0)  # the same speed: judged again within the half hour
    assert det.mu == base and not det.evaluate(T0 + t).unknown and det.rewarm is None
    t, step = _restart(det, t, step, 300)
    t, step = _run(det, t, step, 30 * 60, 0.7)  # 30% faster steps (more GPUs): another run, learned
    f = det.evaluate(T0 + t)
    assert f.unknown and not f.active and det.mu is None
    t, step = _run(det, t, step, 3 * 3600, 0.7)
    assert not det.evaluate(T0 + t).active and det.mu == pytest.approx(-0.357, abs=0.01)  # log 0.7


def test_the_learned_cycle_survives_a_snapshot():
    det = SlowdownDetector(rule(kind="slowdown"), "r")
    jitter = pai_jitter()
    t = 0.0
    for i in range(3000):  # 20 s a step, the real jitter: a 300-step cycle
        det.observe(Sample(T0 + t, "r", i, {}, "running"))
        t += 20.0 * jitter[i % len(jitter)]
    assert det.season.period == pytest.approx(300, rel=0.03)
    again = SlowdownDetector(rule(kind="slowdown"), "r")
    assert again.import_state(json.loads(json.dumps(det.export_state())))
    assert again.season.period == det.season.period and again.threshold() == det.threshold()
    assert again.evaluate(T0 + t).reason == det.evaluate(T0 + t).reason
