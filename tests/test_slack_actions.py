"""Slack's interactivity endpoint on the real app: signed clicks acknowledge or silence (stored with who
did it), badly signed or stale ones get 401 and change nothing."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select

from alerts.notifiers.slack.interactions import ACK, SILENCE_4H, encode_button_value
from monitor.settings import Settings
from monitor.storage.models import Alert, AlertGroup, AuditEvent, Notification, Silence
from monitor.web.app import create_app
from tests.helpers import make_service, tick
from tests.test_slack_interactions import ROOT_REF, SECRET, body_of, click, signed


def stalled(db_url, clock, monkeypatch):
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    service, _ = make_service(db_url, clock)
    service.settings = Settings(database_url=db_url)
    service.engine.resume()
    tick(service, clock, 30 * 60)
    with service.sessions.begin() as s:
        group = s.scalars(select(AlertGroup)).one()
        group.root_ref = ROOT_REF  # as if posted to Slack (the buttons are on that message)
        alert = s.scalars(select(Alert).where(Alert.rule == "progress_stalled")).one()
        return service, group.group_key, alert.id


def post(client, payload, ts):
    body = body_of(payload)
    return client.post(
        "/api/slack/interactions",
        content=body,
        headers={**signed(body, ts=ts), "content-type": "application/x-www-form-urlencoded"},
    )


def test_acknowledge_and_silence_from_slack(db_url, clock, monkeypatch):
    service, group_key, alert_id = stalled(db_url, clock, monkeypatch)
    client = TestClient(create_app(service), base_url="http://localhost")
    r = post(client, click(ACK, encode_button_value(group_key, [alert_id])), clock.time())
    assert r.status_code == 200, r.text
    assert "Acknowledged by" in r.json()["text"]
    with service.sessions() as s:
        a = s.get(Alert, alert_id)
        assert a.acked_by and a.acked_at == clock.time()
        assert s.scalar(select(Notification).where(Notification.idempotency_key.like("ack:%"))) is not None
    r = post(client, click(SILENCE_4H, encode_button_value(group_key, [alert_id])), clock.time())
    assert r.status_code == 200 and "for 4h" in r.json()["text"]
    with service.sessions() as s:
        silence = s.scalars(select(Silence)).one()
        assert silence.matchers == {"matchers": ['run="sim:hero-a/hero-a"']}
        assert silence.ends_at - silence.starts_at == 4 * 3600 and silence.comment == "from Slack"
    service.stop()


def test_bad_or_stale_signatures_change_nothing(db_url, clock, monkeypatch):
    service, group_key, alert_id = stalled(db_url, clock, monkeypatch)
    client = TestClient(create_app(service), base_url="http://localhost")
    payload = click(ACK, encode_button_value(group_key, [alert_id]))
    body = body_of(payload)
    bad = {**signed(body, ts=clock.time()), "X-Slack-Signature": "v0=" + "0" * 64}
    assert client.post("/api/slack/interactions", content=body, headers=bad).status_code == 401
    assert post(client, payload, clock.time() - 301).status_code == 401, "older than five minutes"
    assert client.post("/api/slack/interactions", content=body).status_code == 401, "no signature at all"
    with service.sessions() as s:
        assert s.get(Alert, alert_id).acked_by is None
        assert s.scalars(select(Silence)).all() == []
        refused = s.scalars(select(AuditEvent).where(AuditEvent.action == "refused")).all()
        assert [(e.door, e.via, e.detail.split(" (from")[0]) for e in refused] == [
            ("slack", "slack", "bad or stale Slack signature")
        ] * 3, "each refused click is in the audit trail"
    service.stop()
