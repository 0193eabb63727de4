"""One on-call action, four doors: acknowledging from the API, the dashboard, Slack's button and the
CLI leaves the same timeline entry and the same Slack update (a quiet edit of the thread's root that
says who took it, and a reply in the thread), against a real server (uvicorn on loopback), the real
slack-sdk and the Slack stand-in."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from sqlalchemy import select
from typer.testing import CliRunner

from alerts.clock import ManualClock
from alerts.notifiers.slack.interactions import ACK, encode_button_value
from monitor.cli.main import app
from monitor.config.loader import parse_config
from monitor.delivery.actor import Actor, Door, Role, Via
from monitor.service import build_service
from monitor.settings import Settings
from monitor.storage.models import AlertGroup, AlertTransition
from monitor.web import people_tokens
from monitor.web.app import create_app
from tests.dashboard.conftest import free_port
from tests.dashboard.support import TOKEN
from tests.helpers import sim_id
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin
from tests.test_slack_interactions import SECRET, body_of, click, signed

RUNS = ["via-api", "via-dashboard", "via-slack", "via-cli"]
CHANNEL = "C0ALERTS"


def config(slack: SlackStandin) -> str:
    watches = "".join(
        f"  - name: {r}\n    poll_interval: 60s\n    sim: {{seed: {i}, step_time: 10s, "
        "incidents: [{kind: stall, at: 5m, duration: 3h}]}\n"
        for i, r in enumerate(RUNS)
    )
    return (
        f"watch:\n{watches}"
        f"receivers:\n  - {{name: oncall, kind: slack, channel: {CHANNEL}, base_url: '{slack.api_url}', "
        "timeout: 5s, plots: false}\n"
        "route: {receiver: oncall, group_wait: 0s, group_interval: 1m}\n"
    )


def test_an_ack_from_the_api_the_dashboard_slack_and_the_cli_is_one_and_the_same(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    clock = ManualClock(1_780_000_000.0)
    with SlackStandin(channels=[CHANNEL]) as slack:
        settings = Settings(database_url=f"sqlite:///{tmp_path / 'hw.db'}", HEROWATCH_API_TOKEN=TOKEN)
        service = build_service(parse_config(config(slack), "t.yaml"), settings, clock, auto_migrate=True)
        service.engine.resume()
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning")
        )
        threading.Thread(target=server.run, daemon=True).start()
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 15
            while not server.started:
                assert time.monotonic() < deadline
                time.sleep(0.02)

            def cycle(minutes: int) -> None:
                for _ in range(minutes):
                    clock.advance(60)
                    for w in RUNS:
                        service.engine.poll(w)
                    service.dispatcher.run_once()

            cycle(25)  # every run has been stalled for 20 minutes: four pages, four threads
            assert len(slack.roots(CHANNEL)) == 4
            bearer = {"Authorization": f"Bearer {TOKEN}"}
            alerts = httpx.get(f"{url}/api/alerts", params={"state": "firing"}, headers=bearer).json()
            ids = {a["run_title"]: a["id"] for a in alerts if a["rule"] == "progress_stalled"}
            assert set(ids) == set(RUNS)

            # amy's personal token (issued from the dashboard's Tokens page once she signed in)
            amy = Actor(name="amy", role=Role.responder, door=Door.dashboard, via=Via.oidc)
            _, amy_token = people_tokens.issue(service.api_context(), amy, "laptop")
            # 1. the API, with her token: the body's name is not who acts
            r = httpx.post(
                f"{url}/api/alerts/{ids['via-api']}/ack",
                json={"by": "someone else", "comment": "on it"},
                headers={"Authorization": f"Bearer {amy_token}"},
            )
            assert r.status_code == 200, r.text
            # 2. the dashboard's button, logged in, with the session's CSRF token
            web = httpx.Client(base_url=url, follow_redirects=True)
            web.post(
                "/login", data={"name": "amy", "token": TOKEN, "next": "/alerts"}, headers={"Origin": url}
            )
            csrf = re.search(r'name="csrf" value="([^"]+)"', web.get("/alerts").text).group(1)
            r = web.post(
                f"/alerts/{ids['via-dashboard']}/ack",
                data={"csrf": csrf, "comment": "on it", "next": "/alerts"},
                headers={"Origin": url},
            )
            assert r.status_code == 200, r.text[:300]
            # 3. Slack's button, on herowatch's own message for that run's group
            with service.sessions() as s:
                [group] = [g for g in s.scalars(select(AlertGroup)) if g.labels["run"] == sim_id("via-slack")]
                channel, ts = group.root_ref.split(":")
            payload = click(ACK, encode_button_value(group.group_key, [ids["via-slack"]]))
            payload["user"] = {"id": "U0AMY", "username": "amy", "name": "amy", "team_id": "T0HERO"}
            payload["container"].update({"channel_id": channel, "message_ts": ts})
            payload["channel"] = {"id": channel}
            payload["message"] = {**payload.get("message", {}), "ts": ts}
            body = body_of(payload)
            r = httpx.post(
                f"{url}/api/slack/interactions", content=body, headers=signed(body, ts=clock.time())
            )
            assert r.status_code == 200 and "Acknowledged by amy" in r.json()["text"], r.text
            # 4. the CLI, through the same API, with her token
            env = {"HEROWATCH_URL": url, "HEROWATCH_API_TOKEN": amy_token, "COLUMNS": "80"}
            r = CliRunner().invoke(app, ["alert", "ack", str(ids["via-cli"]), "-c", "on it"], env=env)
            assert r.exit_code == 0 and "acknowledged by amy" in r.output, r.output

            # the same timeline entry for each (Slack's names the Slack user, and where the click came from)
            with service.sessions() as s:
                notes = {
                    t.run_id.rsplit("/", 1)[1]: (t.from_state, t.to_state, t.reason)
                    for t in s.scalars(
                        select(AlertTransition).where(AlertTransition.reason.like("acknowledged%"))
                    )
                }
            assert notes == {
                "via-api": ("firing", "firing", "acknowledged by amy: on it"),
                "via-dashboard": ("firing", "firing", "acknowledged by automation (amy): on it"),
                "via-slack": ("firing", "firing", "acknowledged by amy (Slack U0AMY): from Slack"),
                "via-cli": ("firing", "firing", "acknowledged by amy: on it"),
            }
            # the same Slack update: each root edited to say who took it, one quiet reply, no new page
            slack.reset_calls()
            cycle(2)
            roots = slack.roots(CHANNEL)
            assert len(roots) == 4 and len(slack.pages(CHANNEL)) == 4, "an ack pages nobody"
            for root in roots:
                assert "Acknowledged by " in str(root.blocks) and "amy" in str(root.blocks), root.text
                replies = [
                    m
                    for m in slack.thread(CHANNEL, root.ts)
                    if m.text.startswith("Acknowledged by ") and "amy" in m.text
                ]
                assert len(replies) == 1 and not replies[0].broadcast, [
                    m.text for m in slack.thread(CHANNEL, root.ts)
                ]
            updates = slack.calls_to("chat.update")
            assert len(updates) == 4
            # the person's own name in the Slack updates of what she did with her token (API and CLI)
            by_amy = [
                r
                for r in roots
                if "Acknowledged by amy" in str(r.blocks) and "automation" not in str(r.blocks)
            ]
            assert len(by_amy) == 3, [str(r.blocks)[:300] for r in roots]  # API, CLI, Slack's own button
            # one audit line per door, each naming who and how
            trail = httpx.get(f"{url}/api/audit", params={"action": "ack"}, headers=bearer).json()
            doors = {(e["door"], e["actor"], e["role"]) for e in trail}
            assert doors == {
                ("api", "amy", "responder"),
                ("dashboard", "automation (amy)", "automation"),
                ("slack", "amy (Slack U0AMY)", "responder"),
                ("cli", "amy", "responder"),
            }, trail
        finally:
            server.should_exit = True
            service.stop()
