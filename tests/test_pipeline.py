"""The notification pipeline on both databases: grouping and its timers, silences, inhibition, repeats
and acknowledgements, dashboard-only routes. Time moves only with the injected clock."""

from __future__ import annotations

import pytest

from alerts.grouping import GroupTiming
from alerts.inhibition import InhibitRule
from alerts.notifiers.base import SendResult
from alerts.outbox import Dispatcher
from alerts.routing import Matcher, Route
from monitor.delivery.planner import Planner
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Alert, Notification, Silence
from monitor.storage.outbox_store import SqlOutboxStore

T0 = 1_780_000_000.0
TIMING = GroupTiming(group_wait=30, group_interval=300, repeat_interval=3600)


class Recorder:
    def __init__(self):
        self.got = []

    def send(self, n):
        self.got.append(n)
        return SendResult.sent(ref=f"C1:{len(self.got)}")


class Pipeline:
    def __init__(self, url, route=None, inhibit=()):
        self.engine = make_engine(url)
        self.sessions = make_sessionmaker(self.engine)
        self.now = T0
        route = route or Route("slack", timing=TIMING)
        self.planner = Planner(route, {"slack": "slack", "board": "dashboard"}, list(inhibit))
        self.rec = Recorder()
        self.store = SqlOutboxStore(self.sessions, self.planner)
        self.dispatcher = Dispatcher(self.store, {"slack": self.rec}, lambda: self.now)

    def alert(self, rule, run="hero-1", severity="critical", state="firing", **labels):
        with self.sessions.begin() as s:
            a = Alert(
                fingerprint=f"{rule}-{run}",
                rule=rule,
                kind="x",
                run_id=run,
                severity=severity,
                labels={"alertname": rule, "run": run, "severity": severity, **labels},
                annotations={"summary": f"{run}: {rule}"},
                state=state,
                active_at=self.now,
                fired_at=self.now,
                updated_at=self.now,
            )
            s.add(a)
            s.flush()
            self.planner.on_transition(s, a, "firing", self.now)
            return a.id

    def resolve(self, alert_id):
        with self.sessions.begin() as s:
            a = s.get(Alert, alert_id)
            a.state, a.resolved_at = "resolved", self.now
            self.planner.on_transition(s, a, "resolved", self.now)

    def at(self, seconds):
        self.now = T0 + seconds
        with self.sessions.begin() as s:
            self.planner.plan_repeats(s, self.now)
        self.dispatcher.run_once()
        return self.rec.got

    def close(self):
        self.engine.dispose()


@pytest.fixture
def pipe(migrated_url):
    p = Pipeline(migrated_url)
    yield p
    p.close()


def test_alerts_of_one_run_within_group_wait_go_out_as_one_message(pipe):
    a = pipe.alert("progress_stalled")
    assert pipe.at(10) == [], "group_wait holds the first message"
    pipe.now = T0 + 20
    b = pipe.alert("telemetry_gone", severity="warning")
    other = pipe.alert("nan_loss", run="hero-2")
    got = pipe.at(31)
    assert len(got) == 1 and got[0].labels["run"] == "hero-1"
    assert got[0].extra["kind"] == "open"
    assert sorted(got[0].extra["changed"]) == sorted([a, b])
    assert got[0].alertname == "progress_stalled", "the most severe alert leads"
    got = pipe.at(51)
    assert len(got) == 2 and got[1].labels["run"] == "hero-2" and got[1].extra["changed"] == [other]


def test_later_changes_wait_for_group_interval_and_carry_the_root_ref(pipe):
    a = pipe.alert("progress_stalled")
    pipe.at(30)
    pipe.now = T0 + 60
    pipe.resolve(a)
    assert len(pipe.at(100)) == 1, "not before group_interval (300 s) after the first message"
    got = pipe.at(331)
    assert len(got) == 2
    update = got[1]
    assert update.status == "resolved" and update.extra["kind"] == "update"
    assert update.extra["root_ref"] == "C1:1", "the thread's root is the first message"
    assert update.extra["alerts"][0]["state"] == "resolved"


def test_a_silenced_alert_is_recorded_but_not_sent(pipe):
    with pipe.sessions.begin() as s:
        s.add(
            Silence(
                matchers={"matchers": ['run="hero-1"']},
                starts_at=T0,
                ends_at=T0 + 3600,
                created_by="amy",
                comment="known bad node",
                created_at=T0,
            )
        )
    pipe.alert("progress_stalled")
    pipe.alert("progress_stalled", run="hero-2")
    got = pipe.at(40)
    assert [n.labels["run"] for n in got] == ["hero-2"]
    with pipe.sessions() as s:
        statuses = sorted(n.status for n in s.query(Notification))
        assert statuses == ["muted", "sent"]
        assert s.query(Alert).filter_by(run_id="hero-1").one().state == "firing", "still recorded and shown"


def test_after_a_silence_expires_reminders_go_out_again(pipe):
    with pipe.sessions.begin() as s:
        s.add(
            Silence(
                matchers={"matchers": ['alertname=~"progress_.*"']},
                starts_at=T0,
                ends_at=T0 + 600,
                created_by="amy",
                created_at=T0,
            )
        )
    pipe.alert("progress_stalled")
    pipe.alert("grad_norm_high", severity="warning")
    got = pipe.at(40)
    assert len(got) == 1 and got[0].extra["changed"] and got[0].alertname == "grad_norm_high"
    assert [a["silenced"] for a in got[0].extra["alerts"] if a["alertname"] == "progress_stalled"] == [
        "silenced by silence 1"
    ], "the message shows the silenced alert as such"


def test_inhibition_one_outage_one_page(migrated_url):
    rule = InhibitRule.parse(['alertname="run_crashed"'], ['alertname=~"progress_stalled|telemetry_gone"'])
    p = Pipeline(migrated_url, inhibit=[rule])
    p.alert("run_crashed")
    p.alert("progress_stalled")
    p.alert("progress_stalled", run="hero-2")  # another run: not inhibited
    got = p.at(40)
    names = sorted((n.labels["run"], n.alertname, tuple(sorted(n.extra["changed"]))) for n in got)
    assert names == [("hero-1", "run_crashed", (1,)), ("hero-2", "progress_stalled", (3,))]
    p.close()


def test_repeat_interval_and_acknowledgement(pipe):
    a = pipe.alert("progress_stalled")
    pipe.at(30)
    assert len(pipe.at(30 + 3599)) == 1
    got = pipe.at(30 + 3600)
    assert len(got) == 2 and got[1].extra["kind"] == "repeat" and got[1].extra["root_ref"] == "C1:1"
    with pipe.sessions.begin() as s:
        s.get(Alert, a).acked_by, s.get(Alert, a).acked_at = "amy", pipe.now
    assert len(pipe.at(30 + 3 * 3600)) == 2, "an acknowledged alert is not repeated"


def test_warnings_can_be_dashboard_only(migrated_url):
    route = Route(
        "slack", timing=TIMING, routes=(Route("board", matchers=(Matcher.parse("severity=warning"),)),)
    )
    p = Pipeline(migrated_url, route=route)
    p.alert("grad_norm_high", severity="warning")
    p.alert("progress_stalled")
    got = p.at(40)
    assert [n.alertname for n in got] == ["progress_stalled"]
    with p.sessions() as s:
        assert s.query(Notification).count() == 1, "nothing queued for the dashboard-only route"
    p.close()


def test_send_resolved_off_sends_no_resolution(migrated_url):
    p = Pipeline(migrated_url, route=Route("slack", timing=GroupTiming(30, 300, 3600, send_resolved=False)))
    a = p.alert("progress_stalled")
    p.at(30)
    p.now = T0 + 40
    p.resolve(a)
    assert len(p.at(1000)) == 1
    p.close()


def test_route_timers_come_from_the_config_and_children_inherit_them():
    from monitor.config import parse_config
    from monitor.service import build_route

    cfg = parse_config(
        "receivers: [{name: a}, {name: b}]\n"
        "route:\n  receiver: a\n  group_wait: 0s\n  repeat_interval: 1h\n  send_resolved: false\n"
        "  routes:\n    - {receiver: b, matchers: ['severity=\"warning\"'], group_interval: 10m}\n"
    )
    root = build_route(cfg.route)
    assert root.timing == GroupTiming(
        group_wait=0, group_interval=300, repeat_interval=3600, send_resolved=False
    )
    child = root.routes[0]
    assert child.timing == GroupTiming(
        group_wait=0, group_interval=600, repeat_interval=3600, send_resolved=False
    )
