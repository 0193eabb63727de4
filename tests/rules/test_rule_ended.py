"""``ended``: crashed, failed or killed runs page with their cause; a run that finishes before the
watch's target_step pages; short runs that finish and crash flickers do not."""

from __future__ import annotations

import pytest

from monitor.rules.ended import EndedDetector
from monitor.rules.loader import RuleSet
from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.helpers import make_service, tick
from tests.rules.helpers_rules import T0, hero, rule
from tests.rules.real_scenarios import Scenario

MIN = 60.0


def ended(**params: object) -> EndedDetector:
    return EndedDetector(rule(kind="ended", **params), "r")


def feed(det: EndedDetector, samples: list[Sample]) -> None:
    for s in samples:
        det.observe(s)


def test_the_watch_target_step_reaches_the_rules_that_take_it_and_an_override_wins():
    rules = RuleSet(tuple(hero()))
    by_name = {r.name: r for r in rules.for_run(settings={"target_step": 5000})}
    assert by_name["run_finished_early"].target_step == 5000 and by_name["run_crashed"].target_step == 5000
    assert by_name["progress_stalled"] == next(r for r in hero() if r.name == "progress_stalled")
    patched = {
        r.name: r for r in rules.for_run({"run_finished_early": {"target_step": 7}}, (), {"target_step": 5})
    }
    assert patched["run_finished_early"].target_step == 7


def test_a_real_run_that_finishes_before_its_target_pages_and_one_that_reaches_it_does_not():
    early = Scenario(last_step=12000, end_state="finished", watch_after=20 * MIN)
    rules = RuleSet(tuple(hero())).for_run(settings={"target_step": 19559})
    result = replay(early.build(), rules, end=early.end)
    (page,) = [e for e in result.firing() if e.rule == "run_finished_early"]
    assert page.severity == "critical" and "at step 12000 of 19559 (61%)" in page.reason
    assert early.last_t + 5 * MIN < page.t <= early.last_t + 7 * MIN  # a minute to report, 5 of grace
    done = Scenario(end_state="finished", watch_after=20 * MIN)
    result = replay(done.build(), rules, end=done.end)
    assert [e for e in result.events if e.severity != "info"] == []
    short = Scenario(last_step=300, save_every=None, end_state="finished", watch_after=20 * MIN)
    result = replay(short.build(), hero(), end=short.end)  # no target: a short run that finished well
    assert [e for e in result.events if e.severity != "info"] == []


def test_on_the_engine_the_watch_target_step_pages_a_run_that_finished_short(db_url, clock):
    config = """
watch:
  - name: short
    poll_interval: 60s
    target_step: 1000
    sim: {seed: 1, step_time: 10s, target_step: 50}
"""
    service, out = make_service(db_url, clock, config)
    service.engine.resume()
    tick(service, clock, 20 * MIN)  # 50 steps take about 8 minutes, then the run reports finished
    assert out.getvalue().count("FIRING CRITICAL run_finished_early run=short") == 1
    assert "of 1000 (5%)" in out.getvalue()
    service.stop()


@pytest.mark.parametrize("flicker", ["crashed", "unknown"])
def test_a_state_flicker_shorter_than_the_grace_never_pages(flicker):
    states = [Sample(T0 + i * MIN, "r", i, {}, "running") for i in range(10)]
    states += [Sample(T0 + (10 + i) * MIN, "r", state=flicker) for i in range(4)]
    states += [Sample(T0 + (14 + i) * MIN, "r", 10 + i, {}, "running") for i in range(20)]
    result = replay(states, hero())
    assert [e for e in result.events if e.rule in ("run_crashed", "progress_stalled")] == []


def test_the_cause_of_a_crash_when_a_source_has_it():
    d = ended()
    feed(d, [Sample(T0, "r", 100, {}, "running"), Sample(T0 + 10, "r", metrics={"oom_kills_total": 3.0})])
    feed(d, [Sample(T0 + 60, "r", metrics={"oom_kills_total": 4.0}), Sample(T0 + 90, "r", state="crashed")])
    assert d.hot  # a known cause: no grace
    f = d.evaluate(T0 + 90)
    assert f.active and "cause: an OOM kill 30s before (oom_kills_total +1)" in f.reason
    old = ended()  # an OOM kill long before the crash is not its cause
    feed(
        old,
        [
            Sample(T0, "r", metrics={"oom_kills_total": 3.0}),
            Sample(T0 + 60, "r", metrics={"oom_kills_total": 4.0}),
        ],
    )
    feed(old, [Sample(T0 + 3600, "r", state="crashed")])
    assert not old.evaluate(T0 + 3600 + 60).active and old.wake_at == T0 + 3600 + 300
    f = old.evaluate(T0 + 3600 + 301)
    assert f.active and "cause" not in f.reason and "heartbeats" in f.reason
    late = ended()  # the OOM kill is scraped a little after the tracker said crashed
    feed(late, [Sample(T0, "r", metrics={"oom_kills_total": 0.0}), Sample(T0 + 5, "r", state="crashed")])
    feed(late, [Sample(T0 + 30, "r", metrics={"oom_kills_total": 1.0})])
    assert late.hot and "an OOM kill just after" in late.evaluate(T0 + 30).reason


def test_killed_and_failed_page_at_once_a_resume_clears_and_preemption_is_the_schedulers():
    d = ended()
    feed(d, [Sample(T0, "r", 5, {}, "running"), Sample(T0 + 1, "r", state="killed")])
    assert d.hot and d.evaluate(T0 + 1).active
    feed(d, [Sample(T0 + 60, "r", state="running")])
    assert not d.hot and not d.evaluate(T0 + 60).active
    feed(d, [Sample(T0 + 120, "r", state="preempted")])
    assert not d.evaluate(T0 + 3600).active
