"""The notification pipeline on both databases: grouping and its timers, silences, inhibition, repeats
and acknowledgements, dashboard-only routes. Time moves only with the injected clock."""

from __future__ import annotations

import pytest

from alerts.grouping import GroupTiming
from alerts.inhibition import InhibitRule
from alerts.notifiers.base import SendResult
from alerts.outbox import Dispatcher
from alerts.routing import Matcher, Route
from monitor.delivery import oncall, reminders
from monitor.delivery.actor import Actor
from monitor.delivery.enqueue import Enqueuer
from monitor.delivery.pipeline import Pipeline as DeliveryPipeline
from monitor.delivery.plan import DropReason
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Alert, AlertGroup, Notification, Silence

T0 = 1_780_000_000.0
TIMING = GroupTiming(group_wait=30, group_interval=300, repeat_interval=3600)


class Recorder:
    def __init__(self):
        self.got = []

    def send(self, view):
        self.got.append(view)
        return SendResult.sent(ref=view.root_ref or f"C1:{len(self.got)}")


def lead(view):
    return view.lead


class Pipeline:
    def __init__(self, url, route=None, inhibit=()):
        self.engine = make_engine(url)
        self.sessions = make_sessionmaker(self.engine)
        self.now = T0
        route = route or Route("slack", timing=TIMING)
        self.enqueuer = Enqueuer(route, {"slack": "slack", "board": "dashboard"})
        self.inhibit = list(inhibit)
        self.rec = Recorder()
        self.store = DeliveryPipeline(self.sessions, inhibit_rules=self.inhibit)
        self.dispatcher = Dispatcher(self.store, {"slack": self.rec}, lambda: self.now)
        self.n = 0

    def alert(self, rule, run="hero-1", severity="critical", state="firing", **labels):
        self.n += 1
        with self.sessions.begin() as s:
            a = Alert(
                fingerprint=f"{rule}-{run}-{self.n}",
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
            self.enqueuer.on_transition(s, a, "firing", self.now)
            return a.id

    def resolve(self, alert_id):
        with self.sessions.begin() as s:
            a = s.get(Alert, alert_id)
            a.state, a.resolved_at = "resolved", self.now
            self.enqueuer.on_transition(s, a, "resolved", self.now)

    def at(self, seconds):
        self.now = T0 + seconds
        with self.sessions.begin() as s:
            reminders.plan(s, self.now, self.inhibit, self.store.silences)
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
    assert len(got) == 1 and got[0].run == "hero-1"
    assert got[0].kind == "open" and got[0].notifies
    assert got[0].changed == {str(a), str(b)}
    assert lead(got[0]).alertname == "progress_stalled", "the most severe alert leads"
    got = pipe.at(51)
    assert len(got) == 2 and got[1].run == "hero-2" and got[1].changed == {str(other)}


def test_later_changes_wait_for_group_interval_and_carry_the_root_ref(pipe):
    a = pipe.alert("progress_stalled")
    pipe.at(30)
    pipe.now = T0 + 60
    pipe.resolve(a)
    assert len(pipe.at(100)) == 1, "not before group_interval (300 s) after the first message"
    got = pipe.at(331)
    assert len(got) == 2
    update = got[1]
    assert update.status == "resolved" and update.kind == "update" and not update.notifies
    assert update.root_ref == "C1:1", "the thread's root is the first message"
    assert update.alerts[0].state == "resolved"


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
    assert [n.run for n in got] == ["hero-2"]
    with pipe.sessions() as s:
        statuses = sorted((n.status, n.last_error) for n in s.query(Notification))
        assert statuses == [("dropped", "nothing to tell: muted"), ("sent", None)], "dropped, saying why"
        assert s.query(Alert).filter_by(run_id="hero-1").one().state == "firing", "still recorded and shown"
    assert pipe.store.dropped == {DropReason.MUTED: 1}  # shown on /metrics


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
    assert len(got) == 1 and [a.alertname for a in got[0].changed_alerts] == ["grad_norm_high"]
    assert [a.alertname for a in got[0].alerts] == ["grad_norm_high"], "a muted alert is not announced"
    got = pipe.at(700)  # the silence is over, and the stall still fires: now it pages
    assert len(got) == 2 and got[1].kind == "notify" and got[1].news.alertname == "progress_stalled"


def test_inhibition_one_outage_one_page(migrated_url):
    rule = InhibitRule.parse(['alertname="run_crashed"'], ['alertname=~"progress_stalled|telemetry_gone"'])
    p = Pipeline(migrated_url, inhibit=[rule])
    p.alert("run_crashed")
    p.alert("progress_stalled")
    p.alert("progress_stalled", run="hero-2")  # another run: not inhibited
    got = p.at(40)
    names = sorted((n.run, lead(n).alertname, tuple(sorted(n.changed))) for n in got)
    assert names == [("hero-1", "run_crashed", ("1",)), ("hero-2", "progress_stalled", ("3",))]
    p.close()


def test_repeat_interval_and_acknowledgement(pipe):
    a = pipe.alert("progress_stalled")
    pipe.at(30)
    assert len(pipe.at(30 + 3599)) == 1
    got = pipe.at(30 + 3600)
    assert len(got) == 2 and got[1].kind == "repeat" and got[1].root_ref == "C1:1"
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
    assert [lead(n).alertname for n in got] == ["progress_stalled"]
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
    from monitor.alerting_setup import build_route
    from monitor.config import parse_config

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


# ---- group episodes: every page notifies, nothing false ------------------------------------------
def test_a_group_closes_when_all_resolved_and_the_next_alert_opens_a_new_root(pipe):
    a = pipe.alert("progress_stalled")
    pipe.at(30)
    pipe.now = T0 + 60
    pipe.resolve(a)
    got = pipe.at(331)
    assert [v.kind for v in got] == ["open", "update"]
    with pipe.sessions() as s:
        assert s.query(AlertGroup).one().open_key is None, "the episode closed with its resolution"
    pipe.now = T0 + 400
    pipe.alert("progress_stalled")  # the same run hangs again
    got = pipe.at(431)
    assert got[2].kind == "open" and got[2].root_ref is None and got[2].notifies, "a new top-level message"


def test_a_new_alert_in_an_open_group_notifies_and_an_edit_alone_never_does(pipe):
    pipe.alert("oom_kills", severity="warning")
    pipe.at(30)
    pipe.now = T0 + 100
    pipe.alert("progress_stalled")  # a critical page joins the open thread
    got = pipe.at(331)
    assert got[1].kind == "notify" and got[1].notifies and got[1].root_ref == "C1:1"
    assert got[1].news.alertname == "progress_stalled" and lead(got[1]).alertname == "progress_stalled"


def test_a_resolution_names_the_alert_that_resolved(pipe):
    stall = pipe.alert("progress_stalled")
    jump = pipe.alert("loss_jump", severity="warning")
    pipe.at(30)
    pipe.now = T0 + 60
    pipe.resolve(jump)
    got = pipe.at(331)
    assert got[1].kind == "update" and got[1].news.alertname == "loss_jump"
    assert lead(got[1]).alertname == "progress_stalled", "the root still leads with what fires"
    assert stall


def test_an_alert_resolved_before_its_first_send_is_never_announced_as_resolved(pipe):
    a = pipe.alert("progress_stalled")
    pipe.now = T0 + 10
    pipe.resolve(a)
    assert pipe.at(31) == [] and pipe.at(1000) == []
    with pipe.sessions() as s:
        assert sorted(n.status for n in s.query(Notification)) == ["dropped", "merged"]
        dropped = s.query(Notification).filter_by(status="dropped").one()
        assert dropped.last_error == "nothing to tell: never announced", "not muted: told apart"


def test_info_is_recorded_never_sent_unless_a_route_asks_for_it(migrated_url):
    p = Pipeline(migrated_url)
    p.alert("loss_spike", severity="info")
    assert p.at(40) == []
    p.close()
    route = Route(
        "slack",
        timing=TIMING,
        routes=(Route("slack", matchers=(Matcher.parse('severity="info"'),), timing=TIMING),),
    )
    q = Pipeline(migrated_url, route=route)
    q.alert("loss_spike", severity="info", run="hero-9")
    assert [v.news.alertname for v in q.at(40)] == ["loss_spike"]
    q.close()


def test_an_acknowledgement_updates_the_thread_and_the_timeline(pipe):
    a = pipe.alert("progress_stalled")
    pipe.at(30)
    with pipe.sessions.begin() as s:
        oncall.ack_alert(s, a, Actor.slack_user("amy"), "looking", pipe.now)
    got = pipe.at(331)
    assert got[1].kind == "update" and got[1].alerts[0].acked_by == "amy" and not got[1].notifies


def test_the_packs_in_force_bring_their_inhibit_rules_and_a_config_can_replace_them():
    from monitor.alerting_setup import build_inhibit_rules
    from monitor.config import parse_config

    rule, blind = build_inhibit_rules(parse_config("rules: {packs: [hero]}\n"))
    crashed = {"alertname": "run_crashed", "run": "r"}
    assert rule.inhibits(crashed, {"alertname": "progress_stalled", "run": "r"})
    assert not rule.inhibits(crashed, {"alertname": "progress_stalled", "run": "other"})
    only_own = build_inhibit_rules(parse_config("rules: {packs: [hero]}\ninhibit_rules: []\n"))
    assert only_own == [blind], "herowatch's own (a watch-wide watching_blind) always applies"
