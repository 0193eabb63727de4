"""Time to detect is real: each rule kind that can say when its evidence began reports it with its alert
(``Finding.onset``), and it is the start of the trouble, not the moment the rule made up its mind.
The report measures detect time from it (tests/reports/test_detect_times.py)."""

from __future__ import annotations

import random

import pytest

from monitor.rules.loader import load_pack
from monitor.traces.replay import replay
from tests.rules import rl_curves as rc
from tests.rules.helpers_rules import T0, steps


def first_firing(samples, pack: str, rule: str):
    events = [e for e in replay(samples, load_pack(pack)).firing() if e.rule == rule]
    assert events, rule
    return events[0]


RL = [
    (rc.collapse, "rl_reward_collapse"),  # spike, floor mode
    (rc.kl_blowup, "rl_kl_blowup"),
    (rc.entropy_collapse, "rl_entropy_collapse"),
    (rc.nan_reward, "rl_reward_nonfinite"),  # non_finite
]


@pytest.mark.parametrize("change, rule", RL, ids=[r for _, r in RL])
def test_the_rl_rules_report_when_the_trouble_began(change, rule):
    seed = 1
    shape = rc.Shape.draw(random.Random(seed))
    n = int(6 * 3600 / shape.step_seconds)
    start = n * 2 // 3
    began = rc.T0 + start * shape.step_seconds
    fired = first_firing(rc.run(seed, n, rc.from_step(start, change)), "rl", rule)
    assert fired.onset is not None, rule
    assert began - 2 * shape.step_seconds <= fired.onset <= began + 5 * 60, (fired.onset - began, rule)
    assert fired.onset <= fired.t


def test_a_collapse_judged_over_a_window_is_detected_that_window_after_it_began():
    """The issue's case: the reward fell at 05:52 and the rule fired half an hour later; the time to
    detect is that half hour, not 0 s."""
    seed = 2
    shape = rc.Shape.draw(random.Random(seed))
    n = int(6 * 3600 / shape.step_seconds)
    start = n * 2 // 3
    fired = first_firing(rc.run(seed, n, rc.from_step(start, rc.collapse)), "rl", "rl_reward_collapse")
    assert fired.t - fired.onset >= 10 * 60, "judged over a 30-minute floor window"


def test_a_stall_reports_its_last_step():
    rows = steps([2.0] * 100, every=10.0)
    rows += steps([2.0] * 5, every=10.0, start_step=100, t0=T0 + 990 + 3600)  # no step for an hour
    fired = first_firing(rows, "hero", "progress_stalled")
    assert fired.onset == pytest.approx(T0 + 990) and fired.t - fired.onset >= 10 * 60
