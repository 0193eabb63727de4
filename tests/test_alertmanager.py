"""The Alertmanager receiver against the real Alertmanager (Debian's prometheus-alertmanager), started on
loopback with a config that routes every alert to a webhook this test listens on: an alert appears in
Alertmanager's API with herowatch's labels, is routed to the webhook, stays firing while herowatch
re-posts it (the pipeline's refresh), and resolves."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime

import pytest

from alerts.notifiers.alertmanager import AlertmanagerNotifier
from monitor.config import ConfigError, parse_config
from tests.alertmanager_server import AlertmanagerServer, WebhookSink
from tests.delivery_support import EXTERNAL_URL, Delivery
from tests.prometheus_server import free_port, wait_for
from tests.views_support import alert, group

DEAD = f"http://127.0.0.1:{free_port()}"  # nothing listens there: a cluster member that is down


@pytest.fixture(scope="module")
def sink():
    s = WebhookSink()
    yield s
    s.close()


@pytest.fixture(scope="module")
def am(tmp_path_factory, sink):
    with AlertmanagerServer(tmp_path_factory.mktemp("alertmanager"), sink.url) as server:
        yield server


def held(am, alertname):
    """The alert Alertmanager holds as active under this name, or None."""
    found = [a for a in am.alerts() if a["labels"]["alertname"] == alertname]
    return found[0] if found else None


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_an_alert_appears_with_its_labels_is_routed_to_the_webhook_and_resolves(am, sink):
    notifier = AlertmanagerNotifier([DEAD, am.url], resend_interval=60, labels={"team": "ml"})
    now = time.time()
    stall = alert(
        7,
        "progress_stalled",
        started_at=now - 120,
        labels={"run": "hero-1", "alertname": "progress_stalled", "wandb.project": "pretrain"},
        runbook_url="https://runbooks.example/stall",
        value=900.0,
    )
    view = group(stall, receiver="am", links={"dashboard_url": f"{EXTERNAL_URL}/runs/hero-1"})
    assert notifier.send(view).ok, "one live member of the cluster is enough"

    got = wait_for(lambda: held(am, "progress_stalled"), 10, "the alert in Alertmanager's API")
    assert got["labels"] == {
        "alertname": "progress_stalled",
        "severity": "critical",
        "run": "hero-1",
        "wandb_project": "pretrain",  # a valid Prometheus label name
        "team": "ml",
    }
    assert got["status"]["state"] == "active" and got["receivers"] == [{"name": "hook"}]
    assert got["generatorURL"] == f"{EXTERNAL_URL}/runs/hero-1"
    assert got["annotations"]["summary"] == stall.summary
    assert got["annotations"]["runbook_url"] == "https://runbooks.example/stall"
    assert got["annotations"]["value"] == "900"
    assert abs(when(got["startsAt"]) - (now - 120)) < 0.01
    assert 235 < when(got["endsAt"]) - now < 245, "a firing alert lasts 4 re-send intervals unless re-posted"
    hooked = wait_for(lambda: sink.notified("firing", "progress_stalled") or None, 10, "the webhook")
    assert hooked[0]["labels"]["run"] == "hero-1"

    ended = replace(stall, state="resolved", ended_at=time.time())
    assert notifier.send(group(ended, kind="update", receiver="am")).ok
    wait_for(lambda: held(am, "progress_stalled") is None, 10, "the alert to leave the active list")
    wait_for(
        lambda: sink.notified("resolved", "progress_stalled") or None, 10, "the resolution at the webhook"
    )


def test_an_alert_that_is_not_re_posted_ends_by_itself(am, sink):
    notifier = AlertmanagerNotifier([am.url], resend_interval=0.5)  # lasts 2 s without a re-post
    assert notifier.send(group(alert(8, "telemetry_gone", started_at=time.time()), receiver="am")).ok
    wait_for(lambda: held(am, "telemetry_gone"), 10, "the alert in Alertmanager")
    wait_for(lambda: sink.notified("resolved", "telemetry_gone") or None, 20, "Alertmanager to end it")


def test_every_member_down_is_retried_and_a_wrong_url_is_not(am):
    view = group(alert(9, "nan_loss", started_at=time.time()), receiver="am", links={"dashboard_url": "/r"})
    result = AlertmanagerNotifier([DEAD], resend_interval=60).send(view)
    assert not result.ok and result.retry and DEAD in result.error
    result = AlertmanagerNotifier([f"{am.url}/prefix"], resend_interval=60).send(view)  # no such route
    assert not result.ok and not result.retry and "HTTP 404" in result.error
    assert AlertmanagerNotifier([am.url]).send(view).ok, "a link that is no URL is left out, not refused"


def test_through_the_pipeline_it_is_re_posted_while_firing_acknowledged_and_resolved(migrated_url, am, sink):
    notifier = AlertmanagerNotifier([am.url], resend_interval=60)
    d = Delivery(migrated_url, {"am": notifier}, t0=float(int(time.time())))
    d.run("hero-7", url="https://wandb.ai/team/pretrain/runs/hero-7")
    fired = d.alert("loss_diverging", run="hero-7")
    assert d.at(30) == 1, "group_wait, then the first message"
    first = wait_for(lambda: held(am, "loss_diverging"), 10, "the alert in Alertmanager")
    assert first["generatorURL"] == f"{EXTERNAL_URL}/runs/hero-7"
    assert first["annotations"]["wandb_url"] == "https://wandb.ai/team/pretrain/runs/hero-7"
    sent_at = d.group().last_sent_at

    assert d.at(30 + 59) == 0, "not before resend_interval"
    assert d.at(30 + 60) == 1 and d.rows("refresh") == [("refresh", "sent")]
    again = held(am, "loss_diverging")
    assert when(again["endsAt"]) > when(first["endsAt"]) and again["startsAt"] == first["startsAt"]
    assert d.group().last_sent_at == sent_at, "a refresh leaves the group's timers alone"

    d.now = d.t0 + 100
    late = d.alert("oom_kills", run="hero-7", severity="warning")  # waits for group_interval
    assert d.at(160) == 1 and d.rows("refresh")[-1] == ("refresh", "sent"), "refreshed while news waits"
    assert held(am, "oom_kills") is None, "not told before its group_interval"
    assert d.at(330) == 1 and held(am, "oom_kills") is not None, "on time: refreshes did not push it back"

    d.ack(fired)
    assert d.at(331) == 1
    assert held(am, "loss_diverging")["annotations"]["acknowledged_by"] == "amy"
    assert d.at(331 + 60) == 1, "an acknowledged alert still fires: it is still re-posted"

    d.resolve(fired)
    d.resolve(late)
    assert d.at(331 + 300) == 1
    wait_for(lambda: held(am, "loss_diverging") is None, 10, "the resolution in Alertmanager")
    wait_for(lambda: sink.notified("resolved", "loss_diverging") or None, 10, "the resolution at the webhook")
    assert d.group().closed_at is not None
    refreshes = len(d.rows("refresh"))
    assert d.at(331 + 600) == 0 and len(d.rows("refresh")) == refreshes, "a closed episode is not refreshed"
    d.close()


def test_a_silenced_alert_is_not_re_posted(migrated_url, am):
    d = Delivery(
        migrated_url, {"am": AlertmanagerNotifier([am.url], resend_interval=60)}, t0=float(int(time.time()))
    )
    d.alert("grad_norm_high", run="hero-8")
    assert d.at(30) == 1 and held(am, "grad_norm_high") is not None
    d.silence('run="hero-8"', 3600)
    assert d.at(200) == 0 and d.rows("refresh") == [], "silenced here: Alertmanager lets it end"
    d.close()


def test_the_watchdog_heartbeat_holds_until_its_next_beat_is_due(migrated_url, am):
    from monitor.delivery import reminders

    d = Delivery(migrated_url, {"am": AlertmanagerNotifier([am.url], resend_interval=60)}, t0=time.time())
    with d.sessions.begin() as s:
        reminders.heartbeat(s, "am", 300.0, d.now)
    assert d.dispatcher.run_once() == 1
    beat = held(am, "Watchdog")
    assert 595 < when(beat["endsAt"]) - time.time() < 601, "two watchdog intervals, not 4 re-sends"
    d.close()


def test_the_config_names_every_url_and_a_sane_resend_interval():
    cfg = parse_config(
        "route: {receiver: am}\nreceivers:\n"
        "  - {name: am, kind: alertmanager, urls: ['http://am-0:9093/', 'http://am-1:9093/api/v2/alerts']}\n"
    )
    assert cfg.receivers[0].resend_interval == 60
    from alerts.notifiers import build_notifier

    assert build_notifier(cfg.receivers[0]).urls == ["http://am-0:9093", "http://am-1:9093"]
    for text, where in [
        ("{name: am, kind: alertmanager, urls: []}", ":3: receivers[0].urls"),
        ("{name: am, kind: alertmanager, urls: [am-0:9093]}", ":3: receivers[0].urls[0]: 'am-0:9093' is not"),
        ("{name: am, kind: alertmanager, urls: ['http://a'], resend_interval: 0s}", "at least 1s"),
        ("{name: am, kind: alertmanager, urls: ['http://a'], labels: {a-b: c}}", "receivers[0].labels"),
    ]:
        with pytest.raises(ConfigError) as err:
            parse_config(f"route: {{receiver: am}}\nreceivers:\n  - {text}\n", "hw.yaml")
        assert where in str(err.value), str(err.value)
