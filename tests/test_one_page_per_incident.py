"""One page per incident (issue 26, point 5): rules that see the same symptom (a throughput slowdown
on step times and a drop of tokens/s) page once; the second joins the first's message, which shows both
views. On the real llm.c log with the PAI job's real step times, 15% slower from 1.5 h: in replay, and
in the live engine's delivery, read from the messages the receiver got, also when the route's group_by
puts each rule in a group of its own (the incident joins across groups)."""

from __future__ import annotations

import pytest

from alerts.symptoms import joins
from monitor.samples import RunInfo, Sample
from monitor.sources.base import PollResult
from monitor.traces.replay import replay
from tests.helpers import make_service, tick
from tests.rules.helpers_rules import T0, hero
from tests.rules.real_scenarios import Scenario, step_change, with_tokens_per_second
from tests.test_blind_importance import Recorder

HOUR = 3600.0


@pytest.mark.parametrize(
    ("labels", "announced", "joined"),
    [
        ({"run": "a", "symptom": "throughput"}, [{"run": "a", "symptom": "throughput"}], True),
        ({"run": "a", "symptom": "throughput"}, [{"run": "b", "symptom": "throughput"}], False),
        ({"run": "a", "symptom": "throughput"}, [{"run": "a", "symptom": "eval_regression"}], False),
        ({"run": "a"}, [{"run": "a"}], False),  # no symptom: every alert its own incident
        ({"run": "a", "symptom": "throughput"}, [], False),
        # an escalation is news: a critical after a warning of the same incident pages
        (
            {"run": "a", "symptom": "no_progress", "severity": "critical"},
            [{"run": "a", "symptom": "no_progress", "severity": "warning"}],
            False,
        ),
        (
            {"run": "a", "symptom": "no_progress", "severity": "warning"},
            [{"run": "a", "symptom": "no_progress", "severity": "critical"}],
            True,
        ),
    ],
)
def test_an_alert_joins_an_incident_of_the_same_run_and_symptom(labels, announced, joined):
    assert joins(labels, announced) is joined


def _slower() -> tuple[Scenario, list[Sample]]:
    sc = Scenario(slow=step_change(1.5 * HOUR, 1 / 0.85), save_every=None, eval_pause=None, last_step=5000)
    return sc, with_tokens_per_second(sc.build())


def test_a_throughput_drop_is_one_page_in_replay():
    sc, samples = _slower()
    result = replay(samples, hero(), end=sc.end)
    fired = {e.rule for e in result.firing() if e.severity != "info"}
    assert fired == {"throughput_slowdown", "throughput_drop"}, "both views still fire"
    (page,) = result.pages()
    assert page.rule == "throughput_slowdown" and page.t - (T0 + 1.5 * HOUR) < 15 * 60


class Played:
    """A tracker that serves a recorded run as time passes (its times moved to the test's clock)."""

    kind = "sim"

    def __init__(self, samples: list[Sample], start: float) -> None:
        shift = start - T0
        self.samples = [Sample(s.t + shift, s.run, s.step, s.metrics, s.state, s.source) for s in samples]

    def poll(self, target, cursors, now):  # noqa: ANN001, ANN201
        out = PollResult()
        runs = {s.run for s in self.samples}
        for run in runs:
            last = (cursors.get(run) or {}).get("t", -1.0)
            out.samples += [s for s in self.samples if s.run == run and last < s.t <= now]
            out.runs.append(RunInfo(run=run, source="sim", state="running"))
            out.cursors[run] = {"t": now}
        return out

    def close(self) -> None:
        pass


CONFIG = """
watch:
  - name: team
    poll_interval: 60s
    sim: {seed: 1, step_time: 10s}
"""


BY_ALERTNAME = "route: {receiver: console, group_by: [alertname]}\n"  # each rule its own group


@pytest.mark.parametrize("route", ["", BY_ALERTNAME], ids=["default route", "group_by alertname"])
def test_a_throughput_drop_is_one_page_that_shows_both_views(db_url, clock, route):
    """Whatever the route's group_by: the second rule joins the first one's message (its thread and
    its text), it does not open a page of its own."""
    _, samples = _slower()
    service, _ = make_service(db_url, clock, CONFIG + route)
    got = Recorder()
    service.dispatcher.notifiers = {"console": got}
    service.engine.sources["sim"] = Played(samples, clock.time())
    service.engine.resume()
    tick(service, clock, 2.2 * HOUR)
    pages = got.pages()
    assert [v.kind for v in pages] == ["open"], got.said()
    assert [a.alertname for a in pages[0].changed_alerts] == ["throughput_slowdown"]
    last = got.views[-1]
    assert last.kind == "update" and not last.notifies, got.said()
    assert {a.alertname for a in last.alerts} == {"throughput_slowdown", "throughput_drop"}
    service.stop()
