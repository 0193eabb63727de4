"""Hero-cadence runs built from the real logs (issue 39): the llm.c run's real loss, learning rate and
grad norm at every step, step times from the PAI job's real mini-batch times (real_scenarios.py), at a
chosen cadence, with BLOOM-176B's schedule as its chronicles tell it (../shared/data/real): a checkpoint
save every 100 steps taking ~40 s at 105 s a step and an evaluation every 1,000 steps taking ~12
minutes, both scaled with the step time (a faster run saves and evaluates faster). Incidents start at
``onset_step(dt)``: at least 4 hours (and 1,500 steps) into the run, so a baseline exists as it does
for a hero run that has been going for days. Shared by tests/rules/test_cadence.py and
bench/detection_quality.py."""

from __future__ import annotations

from typing import Any

from tests.rules.real_scenarios import Scenario, pai_jitter

BLOOM_STEP = 105.0  # seconds a step (BLOOM-176B)
BLOOM_SAVE = 40.0  # seconds a save, every 100 steps
BLOOM_EVAL = 720.0  # seconds an evaluation, every 1,000 steps


def onset_step(dt: float) -> int:
    """An ordinary step (not a save's or an eval's) at least 4 hours and 1,500 steps in."""
    return max(1500, int(4 * 3600 / dt) // 100 * 100 + 37)


def eval_step_after(dt: float) -> int:
    return (onset_step(dt) // 1000 + 1) * 1000


def hero_run(dt: float, **kw: Any) -> Scenario:
    """A run stepping every ``dt`` seconds with BLOOM's save and eval schedule, scaled to ``dt``."""
    scale = dt / BLOOM_STEP
    base: dict[str, Any] = dict(
        step_time=dt,
        save_every=100,
        save_pause=BLOOM_SAVE * scale + 2.0,
        eval_every=1000,
        eval_pause=BLOOM_EVAL * scale + 5.0,
        last_step=onset_step(dt) + 1500,
    )
    base.update(kw)
    return Scenario(**base)


def eval_pause(dt: float) -> float:
    return BLOOM_EVAL * dt / BLOOM_STEP + 5.0


PHASES = 12  # points of the real jitter's cycle a healthy run is replayed from


def healthy_at_phases(dt: float) -> list[tuple[int, Scenario]]:
    """The healthy hero run (saves, evals, a restart with a rewind 15 minutes long) with the real jitter
    started at ``PHASES`` points of its 300-step cycle (about 170 steps 2-4% slow, 130 about 5% fast):
    at 20 s a step the cycle is 100 minutes, at 100 s 8.3 hours. (jitter offset, run)"""
    cycle = len(pai_jitter())
    offsets = [k * cycle // PHASES for k in range(PHASES)]
    return [(o, hero_run(dt, restarts=[(onset_step(dt) - 266, 900.0)], jitter_offset=o)) for o in offsets]
