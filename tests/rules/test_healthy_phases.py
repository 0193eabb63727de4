"""A healthy hero run pages nothing at any phase of its own step-time jitter (issue 39: "a page that a
healthy run can trigger is a bug"). The run of test_cadence.py's healthy test (real llm.c values, the PAI
job's real step-time jitter, BLOOM's saves and evals, a restart with a rewind) replayed with the jitter
started at 12 points of its 300-step cycle (about 170 steps 2-4% slow, 130 about 5% fast): at 20 s a step
the cycle is 100 minutes, at 100 s 8.3 hours, longer than a 6-hour baseline. The bench runs one phase."""

from __future__ import annotations

import pytest

from monitor.traces.replay import replay
from tests.rules.cadence_scenarios import hero_run, onset_step
from tests.rules.helpers_rules import hero
from tests.rules.real_scenarios import pai_jitter

MIN = 60.0
PHASES = 12


@pytest.mark.parametrize("dt", (1.0, 20.0, 100.0))
def test_a_healthy_run_pages_nothing_at_any_phase_of_its_jitter(dt):
    cycle = len(pai_jitter())
    paged = {}
    for k in range(PHASES):
        offset = k * cycle // PHASES
        sc = hero_run(dt, restarts=[(onset_step(dt) - 266, 15 * MIN)], jitter_offset=offset)
        rows = sc.build()
        pages = replay(rows, hero(), end=sc.end).pages()
        if pages:
            paged[offset] = [(e.rule, round((e.t - rows[0].t) / 3600, 1)) for e in pages]
    assert paged == {}, f"{len(paged)} of {PHASES} phases page (offset: [(rule, hours in)]): {paged}"
