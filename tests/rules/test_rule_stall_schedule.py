"""``stall`` with a learned schedule, on the real llm.c log with the saves, evals, restarts and hangs the
tests add (real_scenarios.py): a hang at an ordinary step pages in minutes, a save that never
finishes within 2 x the usual save + 5 minutes, a healthy run never, and restores are still learned."""

from __future__ import annotations

import json
import statistics
from array import array
from collections import deque

import pytest

from monitor.rules.schedule import MEMORY, PauseSchedule
from monitor.rules.stall import StallDetector
from monitor.traces.replay import replay
from tests.rules.helpers_rules import T0, above_info, fields, hero
from tests.rules.real_scenarios import Scenario, save_steps

MIN = 60.0


def stall_pages(sc: Scenario) -> list:
    result = replay(sc.build(), hero(), end=sc.end)
    return [e for e in result.firing() if e.rule == "progress_stalled"]


@pytest.mark.parametrize("hang", [4321, 9876, 15321, 19001])
def test_a_hang_at_an_ordinary_step_pages_within_minutes(hang):
    # 1.7 s steps, a ~6-minute save every 1000 steps, a ~90 s eval every 250: the schedule is learned
    # after a few saves; then a step that is neither a save nor an eval step is a hang after 5 minutes
    sc = Scenario(hang_after_step=hang, watch_after=3600)
    (page,) = stall_pages(sc)
    waited = page.t - sc.last_t
    assert 5 * MIN < waited <= 6 * MIN, waited  # the target is 10 minutes; the aim was 5
    assert page.step == hang and "not a habitual pause step" in page.reason


def test_a_save_that_never_finishes_pages_within_twice_the_usual_save_plus_5_minutes():
    sc = Scenario(hang_after_step=12000, watch_after=3600)
    sc.save_pause, sc.hang_after_step = 360.0, 12000
    (page,) = stall_pages(sc)
    healthy = Scenario(last_step=12000)
    healthy.build()
    usual = statistics.median(healthy.pauses[s][1] for s in save_steps(healthy))  # the save (and eval)
    waited = page.t - sc.last_t
    assert 1.5 * usual < waited <= 2 * usual + 5 * MIN, (waited, usual)
    assert "every 1000 steps" in page.reason


@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"log_every": 10},  # W&B rows every 10 steps: a save is seen after step 990 or 1000
        {"log_every": 7},  # a stride that does not divide the save period
        {"save_every": None, "save_every_s": 900},  # saves by wall time, every 15 minutes
        {"eval_pause": 240},  # 4-minute evals every 250 steps, 10 minutes when a save comes too
        {"step_time": 10.0},  # a slow run: 54 hours
        {"jitter_hold": 10},  # the real jitter, ten times slower
    ],
    ids=["base", "log-every-10", "log-every-7", "timed-saves", "long-evals", "slow-steps", "slow-jitter"],
)
def test_a_healthy_run_with_saves_and_evals_never_pages_and_hangs_are_still_caught(variant):
    sc = Scenario(**variant)
    result = replay(sc.build(), hero(), end=sc.end)
    assert [e for e in above_info(result) if e[0] == "progress_stalled"] == []
    assert [e for e in result.firing() if e.severity == "critical"] == []
    assert result.summaries[sc.run].stats["progress_stalled"]["schedule_known"] == 1
    hang = max(s for s in sc.step_at if s <= 15321 and s % variant.get("log_every", 1) == 0)
    hung = Scenario(hang_after_step=hang, watch_after=3600, **variant)
    (page,) = stall_pages(hung)
    assert page.t - hung.last_t <= 6 * MIN


def test_before_the_schedule_is_learned_the_floor_holds():
    sc = Scenario(hang_after_step=1500, watch_after=3600)  # one save so far: nothing learned yet
    (page,) = stall_pages(sc)
    assert 15 * MIN < page.t - sc.last_t <= 16 * MIN
    assert page.reason.endswith("(limit 15m)")


def test_a_restore_that_hangs_after_two_normal_ones_pages_within_15_minutes_of_the_usual_restore():
    # the process dies at steps 4500 and 8300 and restores in ~22 minutes; the third restore hangs.
    # Two restores seen: the longest (22m) and half of it again, within the usual 22m and 15 more.
    sc = Scenario(restarts=[(4500, 22 * MIN), (8300, 21 * MIN), (12200, None)], watch_after=3 * 3600)
    pages = stall_pages(sc)
    assert len(pages) == 1
    waited = pages[0].t - sc.restarted_at[-1]
    assert 33 * MIN < waited <= (22 + 15) * MIN, waited
    assert "learned from earlier restores" in pages[0].reason


def test_restores_that_vary_keep_their_spread_as_allowance():
    # restores of 14 to 22 minutes: four seen, the next may take 22 and the 8 they differ by (not only
    # 22 and a quarter of it): 28 minutes pages nothing, and a hang still pages
    restores = [(2500, 14 * MIN), (5000, 22 * MIN), (7500, 20 * MIN), (10000, 22 * MIN)]
    assert stall_pages(Scenario(restarts=[*restores, (12500, 28 * MIN)], end_state="finished")) == []
    hung = Scenario(restarts=[*restores, (12500, None)], watch_after=3 * 3600)
    (page,) = stall_pages(hung)
    assert page.t - hung.restarted_at[-1] <= (22 + 15) * MIN


# ---- the schedule itself --------------------------------------------------------------------------
def test_three_pauses_evenly_spaced_in_steps_are_a_habit_two_are_not():
    s = PauseSchedule()
    s.add(1000, T0, 360, 1, 0)
    s.add(2000, T0 + 3600, 350, 1, 0)
    assert s.habits == [] and not s.known(2000, 3600)
    s.add(3000, T0 + 7200, 370, 1, 0)
    (h,) = s.habits
    assert (h["by"], h["period"]) == ("step", 1000)
    assert s.match(7000, T0 + 99999, 1, 0) is h and s.match(7500, T0, 1, 0) is None
    assert not s.known(3000, 7200) and s.known(4001, 9000)  # trusted after 4 periods watched


def test_a_longer_pause_at_a_habitual_step_is_another_kind_of_pause():
    s = PauseSchedule()
    for k in (1, 2, 3):
        s.add(250 * k, T0 + 600 * k, 240, 1, 0)  # evals every 250 steps
    s.add(1000, T0 + 2400, 600, 1, 0)  # the first save, with an eval: not an eval
    assert s.unexplained == 1 and not s.known(10**6, 10**6)
    for k in (5, 6, 7):
        s.add(250 * k, T0 + 600 * k, 240, 1, 0)
    s.add(2000, T0 + 4800, 620, 1, 0)
    s.add(3000, T0 + 7200, 610, 1, 0)
    assert {(h["by"], h["period"]) for h in s.habits} == {("step", 250), ("step", 1000)}
    assert s.unexplained == 0 and s.match(5000, T0, 1, 0)["period"] == 1000  # the longer one


def test_pauses_evenly_spaced_in_time_are_a_habit():
    s = PauseSchedule()
    for k, step in enumerate((517, 1049, 1566)):  # every 15 minutes of wall time
        s.add(step, T0 + 900 * k + (3 if k == 1 else 0), 120, 1, 5)
    (h,) = s.habits
    assert h["by"] == "time" and abs(h["period"] - 900) < 5
    assert s.match(2100, T0 + 2700, 1, 5) is h and s.match(2100, T0 + 2200, 1, 5) is None


def test_the_detector_state_is_bounded_plain_data():
    sc = Scenario()
    det = StallDetector(next(r for r in hero() if r.name == "progress_stalled"), sc.run)
    for s in sc.build():
        det.observe(s)
    assert len(det.schedule.habits) == 1 and len(det.schedule.marks) == MEMORY
    assert len(det.intervals) <= det.rule.window
    state = {k: (list(v) if isinstance(v, deque | array) else v) for k, v in fields(det).items()}
    state["schedule"] = {k: (list(v) if isinstance(v, deque) else v) for k, v in fields(det.schedule).items()}
    json.dumps(state)


def test_a_longer_pause_at_the_save_steps_never_pages_and_hangs_are_still_caught():
    # 100 s a step, a 10-minute save every 50 steps, a 15-minute eval with every 4th save: 27 minutes
    # in all, more than twice the save. Where the save habit pauses, the rule allows the save plus what
    # would not fire alone (the ordinary 17 minutes), before the schedule is trusted as after; and the
    # run came back from it, so the next one, before three have made it a habit of its own, is allowed
    # its length and the save's margin. A hang still pages: at an ordinary step in 17 minutes; at a save
    # step, before the longer kind was seen or once the schedule is trusted, in the save and the ordinary
    # limit (29 minutes), or, while that longer kind is no habit yet (the price), after the longer pause
    # and the save's margin (39 minutes); at an eval step after twice the eval.
    kw = {"step_time": 100.0, "save_every": 50, "save_pause": 600.0, "eval_every": 200, "eval_pause": 900.0}
    healthy = Scenario(last_step=1400, end_state="finished", **kw)
    pages = stall_pages(healthy)
    assert pages == [], [(p.step, p.reason) for p in pages]
    waits = {}
    for hang in (200, 250, 350, 1013, 1050, 1200):
        hung = Scenario(hang_after_step=hang, watch_after=3 * 3600, **kw)
        page = next(p for p in stall_pages(hung) if p.step == hang)
        waits[hang] = (page.t - hung.last_t) / MIN
    assert 15 < waits[1013] <= 18 and 25 < waits[1050] <= 30 and 45 < waits[1200] <= 55, waits
    assert 25 < waits[200] <= 30 and 35 < waits[250] <= 40 and 35 < waits[350] <= 40, waits
    # an eval longer than the ordinary limit by itself still pages where it comes with a save
    longer = Scenario(last_step=400, end_state="finished", **{**kw, "eval_pause": 1500.0})
    assert [p.step for p in stall_pages(longer)] == [200]


def test_while_the_longer_kind_is_not_a_habit_its_pause_is_allowed_where_the_save_habit_pauses():
    s = PauseSchedule()
    for k in (1, 2, 3):
        s.add(50 * k, T0 + 6000 * k, 700, 1, 0)  # saves every 50 steps
    s.add(200, T0 + 24000, 1650, 1, 0)  # a save with an eval: another kind, no habit yet
    save = s.match(250, T0, 1, 0)
    assert s.longest_at(save, 1, 0) == 1650 and s.unexplained == 1
    for k in (2, 3):
        s.add(200 * k, T0 + 24000 * k, 1640, 1, 0)
    assert s.longest_at(save, 1, 0) == 0.0, "a habit of its own now answers for it"
