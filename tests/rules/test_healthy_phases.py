"""A healthy hero run pages nothing at any phase of its own step-time jitter (issue 39: "a page that a
healthy run can trigger is a bug"). The run of test_cadence.py's healthy test (real llm.c values, the PAI
job's real step-time jitter, BLOOM's saves and evals, a restart with a rewind) replayed with the jitter
started at 12 points of its 300-step cycle (``healthy_at_phases``): at 100 s a step the cycle is 8.3
hours, longer than the slowdown rule's 6-hour baseline. The bench's healthy run is one phase of these."""

from __future__ import annotations

import pytest

from monitor.traces.replay import replay
from tests.rules.cadence_scenarios import PHASES, healthy_at_phases
from tests.rules.helpers_rules import hero


@pytest.mark.parametrize("dt", (1.0, 20.0, 100.0))
def test_a_healthy_run_pages_nothing_at_any_phase_of_its_jitter(dt):
    paged = {}
    for offset, sc in healthy_at_phases(dt):
        rows = sc.build()
        pages = replay(rows, hero(), end=sc.end).pages()
        if pages:
            paged[offset] = [(e.rule, round((e.t - rows[0].t) / 3600, 1)) for e in pages]
    assert paged == {}, f"{len(paged)} of {PHASES} phases page (offset: [(rule, hours in)]): {paged}"
