"""Time to page a slowdown that stays, started at every phase of the run's own step-time jitter (issue
39): the hero run (tests/rules/cadence_scenarios.py: real llm.c values, the PAI job's real jitter, BLOOM's
saves and evals scaled) with the jitter started at ``PHASES`` points of its 300-step cycle and the step
time multiplied by ``factor`` from ``onset_step(dt)`` on. Per cadence and phase: minutes from the onset
to the first ``throughput_slowdown`` page (or ``missed``), and pages before the onset (false pages).
Budgets: 60 minutes at 20 s and 100 s a step, 15 at 1 s and 2 s. ``python -m bench.slowdown_phases
[dt ...]``. Not a test."""

from __future__ import annotations

import sys

from monitor.traces.replay import replay
from tests.rules.cadence_scenarios import PHASES, hero_run, onset_step
from tests.rules.helpers_rules import T0, hero
from tests.rules.real_scenarios import pai_jitter, step_change

MIN = 60.0
FACTORS = (1.05, 1.056)  # a 5% slowdown, and the 5.6% of one slow GPU (the issue's)


def time_to_page(dt: float, offset: int, factor: float) -> tuple[float | None, int]:
    """(minutes from the onset to the first slowdown page or None, pages before the onset)."""
    probe = hero_run(dt, jitter_offset=offset)
    probe.build()
    at = T0 + probe.step_at[onset_step(dt)] - T0
    sc = hero_run(dt, jitter_offset=offset, slow=step_change(at - T0, factor))
    result = replay(sc.build(), hero(), end=sc.end)
    early = sum(1 for e in result.pages() if e.t < at)
    hit = next((e for e in result.firing() if e.rule == "throughput_slowdown" and e.t >= at), None)
    return (None if hit is None else (hit.t - at) / MIN), early


def main(cadences: tuple[float, ...] = (2.0, 20.0, 100.0), factors: tuple[float, ...] = FACTORS) -> None:
    cycle = len(pai_jitter())
    offsets = [k * cycle // PHASES for k in range(PHASES)]
    print(f"{'s/step':>6} {'factor':>6}  " + " ".join(f"{o:>6}" for o in offsets) + "   worst  early")
    for dt in cadences:
        for factor in factors:
            cells, worst, early_all = [], 0.0, 0
            for o in offsets:
                took, early = time_to_page(dt, o, factor)
                early_all += early
                cells.append(f"{'missed':>6}" if took is None else f"{took:6.1f}")
                worst = float("inf") if took is None else max(worst, took)
            row = f"{dt:6g} {factor:6.3f}  " + " ".join(cells)
            print(f"{row}  {worst:6.1f}  {early_all:5d}", flush=True)


if __name__ == "__main__":
    main(tuple(float(a) for a in sys.argv[1:]) or (2.0, 20.0, 100.0))
