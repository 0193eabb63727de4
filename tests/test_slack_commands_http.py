"""``/herowatch`` through the HTTP endpoint (for set-ups where Slack can reach herowatch): Slack posts the
command's fields as a signed form to the same URL as the buttons; the answer is the response body.
The signature check and the replay memory are the buttons' own (monitor/web/api/slack.py)."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi.testclient import TestClient
from sqlalchemy import select

from monitor.settings import Settings
from monitor.storage.models import Alert, AlertTransition, Silence
from monitor.web.app import create_app
from tests.helpers import make_service, tick
from tests.test_slack_interactions import SECRET, signed

USER = {"user_id": "U07AMY1234", "user_name": "amy", "team_id": "T0HERO"}


def command(text: str, trigger: str, **over: str) -> bytes:
    fields = {
        "token": "legacy-verification-token",
        "team_domain": "herowatch-test",
        "channel_id": "C0ALERTS",
        "channel_name": "alerts",
        **USER,
        "command": "/herowatch",
        "text": text,
        "api_app_id": "A0HEROWATCH",
        "response_url": "https://hooks.slack.example/commands/T0HERO/1/abc",
        "trigger_id": trigger,
        **over,
    }
    return urlencode(fields).encode()


def post(client: TestClient, body: bytes, ts: float, **headers: str):
    return client.post("/api/slack/interactions", content=body, headers={**signed(body, ts=ts), **headers})


def served(db_url, clock, monkeypatch, team: str | None = None):
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    service, _ = make_service(db_url, clock)
    service.settings = Settings(database_url=db_url, slack_team_id=team)
    service.engine.resume()
    tick(service, clock, 30 * 60)  # the simulated run has been stalled for a while: one alert fires
    return service, TestClient(create_app(service), base_url="http://localhost")


def test_every_command_over_http(db_url, clock, monkeypatch):
    service, client = served(db_url, clock, monkeypatch)
    with service.sessions() as s:
        alert = s.scalars(select(Alert).where(Alert.rule == "progress_stalled")).one()
    r = post(client, command("status", "1.1.a"), clock.time())
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["response_type"] == "ephemeral" and body["blocks"]
    assert (
        "2 runs, 1 needs attention" in body["text"]
        and f"`#{alert.id}` critical *progress_stalled*" in body["text"]
    )
    r = post(client, command(f"ack {alert.id}", "1.2.a"), clock.time())
    assert r.json()["text"].startswith(
        f"Acknowledged alert #{alert.id} (progress_stalled on hero-a) as amy (Slack"
    )
    r = post(client, command("silence hero-a 90m disk swap", "1.3.a"), clock.time())
    assert r.json()["text"].startswith("Silenced hero-a for 1h30m"), r.json()
    report = post(client, command("report", "1.4.a"), clock.time()).json()["text"]
    assert report.startswith("herowatch report: the last 7 days") and "\n• Goodput " in report, report
    assert "stall of hero-a at" in report, "the costliest incident of the week"
    assert "/herowatch ack" in post(client, command("", "1.5.a"), clock.time()).json()["text"]
    with service.sessions() as s:
        [silence] = s.scalars(select(Silence))
        assert silence.created_by == "amy (Slack U07AMY1234)" and silence.comment == "disk swap"
        notes = [
            t.reason for t in s.scalars(select(AlertTransition).where(AlertTransition.alert_id == alert.id))
        ]
        assert "acknowledged by amy (Slack U07AMY1234): from Slack (/herowatch)" in notes
        assert any(n.startswith("silenced by amy (Slack U07AMY1234) for 1h30m") for n in notes), notes
    service.stop()


def test_a_command_is_checked_like_a_click(db_url, clock, monkeypatch):
    service, client = served(db_url, clock, monkeypatch, team="T0HERO")
    body = command("silence hero-a 2h x", "2.1.a")
    bad = {**signed(body, ts=clock.time()), "X-Slack-Signature": "v0=" + "0" * 64}
    assert client.post("/api/slack/interactions", content=body, headers=bad).status_code == 401
    assert post(client, body, clock.time() - 301).status_code == 401, "older than five minutes"
    assert (
        post(client, command("silence hero-a 2h x", "2.2.a", team_id="T0OTHER"), clock.time()).status_code
        == 403
    )
    assert post(client, urlencode({"text": "status"}).encode(), clock.time()).status_code == 400
    assert post(client, command("status", "2.3.a", user_id=""), clock.time()).status_code == 400
    assert post(client, command("x" * 2001, "2.4.a"), clock.time()).status_code == 400
    body = command("silence hero-a 2h x", "2.5.a")
    assert post(client, body, clock.time()).status_code == 200
    assert post(client, body, clock.time()).status_code == 409, "the same signed request again: a replay"
    with service.sessions() as s:
        assert len(s.scalars(select(Silence)).all()) == 1
    service.stop()


def test_stacks_captures_from_the_connected_wrappers_and_is_audited(db_url, clock, monkeypatch):
    """``/herowatch stacks <run>``: the run's connected wrappers are asked (their next poll takes the
    capture), the answer says where the groups will be; without a wrapper it says why, and both are in
    the audit trail as the Slack user's."""
    from monitor.storage.people_models import AuditEvent

    service, client = served(db_url, clock, monkeypatch)
    run_id = "sim:hero-a/hero-a"
    refused = post(client, command("stacks hero-a", "3.1.a"), clock.time()).json()["text"]
    assert refused.startswith("Nothing changed: no `herowatch emit run` wrapper of sim:hero-a/hero-a"), (
        refused
    )
    for node in ("node-0", "node-1"):
        assert service.stacks.take(run_id, node) is None  # the wrappers' polls: connected, nothing asked
    said = post(client, command("stacks hero-a", "3.2.a"), clock.time()).json()["text"]
    assert said.startswith(
        "Asked 2 nodes of hero-a for their stacks as amy (Slack U07AMY1234) (node-0, node-1)"
    )
    assert f"`herowatch stacks {run_id}`" in said
    ask = service.stacks.take(run_id, "node-0")
    assert ask is not None and ask.reason == "asked by amy (Slack U07AMY1234)"
    assert "/herowatch stacks <run>" in post(client, command("help", "3.3.a"), clock.time()).json()["text"]
    with service.sessions() as s:
        rows = s.scalars(
            select(AuditEvent).where(AuditEvent.action == "stacks_capture").order_by(AuditEvent.id)
        )
        got = [(e.actor, e.door, e.outcome, e.run_id) for e in rows]
    assert got == [
        ("amy (Slack U07AMY1234)", "slack", "refused", run_id),
        ("amy (Slack U07AMY1234)", "slack", "done", run_id),
    ], got
    service.stop()
