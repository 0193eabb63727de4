"""``stall`` on a run that never pauses (issue 26, point 2): on the real llm.c log with no saves and no
evals, a long stretch of steady steps is a known schedule ("no habitual pause"), so a hang pages
after ``hang_after`` (minutes), not the 15-minute floor; until the stretch is long enough the floor
holds, and a restore keeps its own allowance."""

from __future__ import annotations

import pytest

from monitor.rules.stall import StallDetector, StallSpec
from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.rules.helpers_rules import above_info, hero
from tests.rules.real_scenarios import Scenario

MIN = 60.0


def steady(**kw: object) -> Scenario:
    return Scenario(save_every=None, eval_pause=None, **kw)


def stall_pages(sc: Scenario) -> list:
    result = replay(sc.build(), hero(), end=sc.end)
    return [e for e in result.firing() if e.rule == "progress_stalled"]


@pytest.mark.parametrize("hang", [6000, 9876, 15321])
def test_a_hang_in_a_run_that_never_pauses_pages_within_minutes(hang):
    sc = steady(hang_after_step=hang, watch_after=3600)
    (page,) = stall_pages(sc)
    waited = page.t - sc.last_t
    assert 5 * MIN < waited <= 6 * MIN, waited  # main waited the 15-minute floor (15.1 min)
    assert "no habitual pause" in page.reason and page.step == hang


def test_a_healthy_steady_run_does_not_page_and_its_schedule_is_known():
    sc = steady()
    result = replay(sc.build(), hero(), end=sc.end)
    assert [e for e in above_info(result) if e[0] == "progress_stalled"] == []
    stats = result.summaries[sc.run].stats["progress_stalled"]
    assert stats["schedule_known"] == 1 and stats["steady"] == 1


def test_early_in_the_run_the_floor_still_holds():
    # an hour of steps (about 2,100): too short to know that the run does not pause
    sc = steady(hang_after_step=2100, watch_after=3600)
    (page,) = stall_pages(sc)
    assert 15 * MIN < page.t - sc.last_t <= 16 * MIN


def test_slow_steps_need_enough_steps_too():
    # 10 s steps: two hours are only 720 steps; a save every 1000 steps would not have shown yet
    sc = steady(step_time=10.0, hang_after_step=1500, watch_after=3600)
    (page,) = stall_pages(sc)
    assert 15 * MIN < page.t - sc.last_t <= 16 * MIN


def test_a_restore_after_a_steady_stretch_keeps_its_own_allowance():
    # steady for hours, then the process restarts: the restore may take the startup allowance
    # (45 minutes), and a 20-minute restore is no page (the llm.c log replayed from step 0 after it)
    sc = steady(restarts=[(9000, 20 * MIN)], last_step=12000)
    result = replay(sc.build(), hero(), end=sc.end)
    assert [e for e in result.firing() if e.rule == "progress_stalled"] == []
    # a hang soon after the restore waits for steadiness again: the floor
    det = StallDetector(StallSpec(name="s"), "r")
    t, step = 0.0, 0
    for _ in range(9000):
        det.observe(Sample(t, "r", step, {"restarts_total": 0.0}, state="running"))
        t, step = t + 1.0, step + 1
    assert det.steady()
    det.observe(Sample(t + 60, "r", metrics={"restarts_total": 1.0}))
    assert det.evaluate(t + 60 + 30 * MIN).active is False  # restoring: within the startup allowance
    t += 60 + 20 * MIN
    for _ in range(100):
        det.observe(Sample(t, "r", step))
        t, step = t + 1.0, step + 1
    assert not det.steady()
    assert det.evaluate(t + 10 * MIN).active is False
    assert det.evaluate(t + 16 * MIN).active is True


def test_a_long_pause_starts_the_count_over_and_asks_for_a_longer_stretch():
    det = StallDetector(StallSpec(name="s"), "r")
    t, step = 0.0, 0
    for _ in range(6000):  # 1 s steps for 100 minutes, then a 10-minute pause
        det.observe(Sample(t, "r", step, state="running"))
        t, step = t + 1.0, step + 1
    assert not det.steady()
    for _ in range(3000):  # 50 more minutes: over two hours watched, steady for 50 minutes only
        det.observe(Sample(t, "r", step))
        t, step = t + 1.0, step + 1
    assert det.steady()  # 2 h 30 min, 9,000 steps with no long pause
    t += 600.0
    det.observe(Sample(t, "r", step))
    assert not det.steady() and det.steady_need == pytest.approx(4 * 8999.0)
    assert det.evaluate(t + 800).active is False  # back to the floor
    assert det.evaluate(t + 901).active is True
