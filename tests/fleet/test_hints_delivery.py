"""Culprit hints from the stored alert to what each notifier sends: the typed view, Slack's Block Kit
(root message and a new alert's thread reply), the webhook's JSON, a round trip through the outbox."""

from __future__ import annotations

import json

from alerts.model import Severity
from alerts.notifiers.slack.blocks import reply_message, root_message
from alerts.notifiers.webhook import WebhookNotifier
from alerts.views import AlertView, GroupView, Hint
from monitor.delivery.compose import _view
from monitor.storage.models import Alert

ODD = {
    "window": [1000.0, 1600.0],
    "items": [
        {"text": "node-17 GPU 3: SM active 0.02, fleet median 0.97", "member": "node-17 GPU 3",
         "host": "node-17", "device": "3", "metric": "sm_active", "label": "SM active", "unit": "ratio",
         "value": 0.02, "median": 0.97, "score": -60.2},
        {"text": "node-17: network rx 0 B/s, fleet median 1.9 GB/s", "member": "node-17", "host": "node-17",
         "device": None, "metric": "net_rx", "label": "network rx", "unit": "bytes_per_second", "value": 0.0,
         "median": 1.9e9, "score": -40.0},
    ],
}  # fmt: skip
CALM = {
    "window": [1000.0, 1600.0],
    "items": [{"text": "Nothing stands out: 704 GPUs on 88 hosts", "member": None}],
}


def stored(hints: dict | None) -> Alert:
    return Alert(
        id=7, fingerprint="f", rule="progress_stalled", kind="stall", run_id="hero-1", metric=None,
        severity="critical", labels={"run": "hero-1", "alertname": "progress_stalled"},
        annotations={"summary": "hero-1: no new step for 20m"}, state="firing", active_at=900.0,
        fired_at=1600.0, updated_at=1600.0, hints=hints,
    )  # fmt: skip


def group(alert: AlertView, kind: str = "open") -> GroupView:
    return GroupView("k", "oncall", kind, "g", {"run": "hero-1"}, (alert,), frozenset({alert.id}))


def test_the_view_carries_the_stored_hints():
    view = _view(stored(ODD), None)
    assert [h.member for h in view.hints] == ["node-17 GPU 3", "node-17"] and view.hints_window == 600.0
    assert view.hints[0] == Hint(
        "node-17 GPU 3: SM active 0.02, fleet median 0.97", "node-17 GPU 3", "sm_active", 0.02, 0.97, -60.2
    )
    assert _view(stored(None), None).hints == ()
    again = AlertView.from_dict(json.loads(json.dumps(view.to_dict())))  # as the outbox keeps it
    assert again.hints == view.hints and again.hints_window == 600.0


def test_slack_names_the_odd_members_in_the_root_and_in_a_new_alerts_reply():
    view = _view(stored(ODD), None)
    root = root_message(group(view))
    text = json.dumps(root.blocks, ensure_ascii=False)
    assert "Stands out from the fleet* over the last 10m" in text
    assert "• node-17 GPU 3: SM active 0.02, fleet median 0.97" in text
    assert "• node-17: network rx 0 B/s, fleet median 1.9 GB/s" in text
    assert root.text.endswith("· stands out: node-17 GPU 3: SM active 0.02, fleet median 0.97")
    assert "node-17 GPU 3" in json.dumps(reply_message(group(view, "notify")).blocks)
    calm = root_message(group(_view(stored(CALM), None)))
    assert ":mag: Nothing stands out: 704 GPUs on 88 hosts." in json.dumps(calm.blocks, ensure_ascii=False)
    assert "stands out:" not in calm.text
    assert "Stands out" not in json.dumps(root_message(group(_view(stored(None), None))).blocks)


def test_the_webhook_payload_holds_the_hints():
    body = WebhookNotifier.payload(group(_view(stored(ODD), None)))
    (alert,) = body["alerts"]
    assert alert["hints"][1] == {
        "text": "node-17: network rx 0 B/s, fleet median 1.9 GB/s",
        "member": "node-17",
        "metric": "net_rx",
        "value": 0.0,
        "median": 1.9e9,
        "score": -40.0,
    }
    assert alert["hints_window"] == 600.0
    plain = AlertView("1", "x", Severity.INFO, "firing", {}, "x", 0.0)
    assert WebhookNotifier.payload(group(plain))["alerts"][0]["hints"] == []
