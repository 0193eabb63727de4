"""``herowatch slack manifest``: valid against Slack's manifest reference (tests/slack_manifest_schema.py)
in both modes and both formats, and its bot scopes are exactly those of the Web API methods herowatch
is seen calling (against the Slack stand-in: the notifier through open, plot, acknowledgement and
resolution, doctor's check, Socket Mode), as Slack's method pages give them."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from alerts.clock import ManualClock
from alerts.notifiers.slack.scopes import APP_METHODS, BOT_METHODS
from monitor.cli.main import app
from monitor.config.loader import parse_config
from monitor.delivery import oncall
from monitor.delivery.actor import Actor
from monitor.service import build_service
from monitor.settings import Settings
from monitor.web.slack.manifest import manifest
from tests.helpers import sim_id
from tests.slack_manifest_schema import SCHEMA
from tests.standins.slack import APP_TOKEN, DEFAULT_TOKEN, SlackStandin

VALIDATOR = jsonschema.Draft7Validator(SCHEMA)
# Slack's method pages: the bot scope a method needs, for a public channel and for a private one
DOCUMENTED = {
    "auth.test": (),
    "chat.postMessage": ("chat:write", "chat:write"),
    "chat.update": ("chat:write", "chat:write"),
    "conversations.history": ("channels:history", "groups:history"),
    "conversations.replies": ("channels:history", "groups:history"),
    "conversations.info": ("channels:read", "groups:read"),
    "files.getUploadURLExternal": ("files:write", "files:write"),
    "files.completeUploadExternal": ("files:write", "files:write"),
}


def errors(doc: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


def cli(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, ["slack", "manifest", *args], env={"COLUMNS": "80"})
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--socket-mode"],
        ["--socket-mode", "--json"],
        ["--url", "https://hw.example.com"],
        ["--json", "--url", "https://hw.example.com/"],
    ],
)
def test_the_printed_manifest_is_valid(args):
    code, out, err = cli(*args)
    assert code == 0, err
    doc = json.loads(out) if "--json" in args else yaml.safe_load(out)
    assert errors(doc) == []
    socket_mode = "--socket-mode" in args
    assert doc["settings"]["socket_mode_enabled"] is socket_mode
    assert doc["settings"]["interactivity"]["is_enabled"] is True
    [command] = doc["features"]["slash_commands"]
    assert command["command"] == "/herowatch"
    if socket_mode:
        assert "url" not in command and "request_url" not in doc["settings"]["interactivity"]
        assert "SLACK_APP_TOKEN" in err and "connections:write" in err
    else:
        endpoint = "https://hw.example.com/api/slack/interactions"
        assert command["url"] == endpoint == doc["settings"]["interactivity"]["request_url"]
        assert "SLACK_SIGNING_SECRET" in err
    assert all(len(line) <= 80 for line in err.splitlines()), err


def test_the_url_comes_from_the_config(tmp_path):
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(
        "server: {external_url: 'https://herowatch.ml.example.org'}\nwatch:\n  - {name: a, sim: {}}\n"
    )
    code, out, err = cli("--config", str(cfg))
    assert code == 0, err
    doc = yaml.safe_load(out)
    assert (
        doc["settings"]["interactivity"]["request_url"]
        == "https://herowatch.ml.example.org/api/slack/interactions"
    )


@pytest.mark.parametrize(
    "args, says",
    [
        ([], "say where Slack reaches herowatch"),
        (["--url", "http://hw.example.com"], "Slack only calls https:// URLs"),
        (["--socket-mode", "--name", "x" * 36], "1 to 35 characters"),
    ],
)
def test_a_manifest_slack_would_refuse_is_not_printed(args, says):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and says in err, (code, out, err)


def test_the_schema_catches_what_slack_refuses():
    """The schema is not a rubber stamp: it refuses what the reference says Slack refuses."""
    good = manifest(socket_mode=False, url="https://hw.example.com")
    assert errors(good) == []
    no_url = json.loads(json.dumps(good))
    del no_url["features"]["slash_commands"][0]["url"]
    assert any("'url' is a required property" in e for e in errors(no_url))
    no_request_url = json.loads(json.dumps(good))
    del no_request_url["settings"]["interactivity"]["request_url"]
    assert any("request_url" in e for e in errors(no_request_url))
    nameless = json.loads(json.dumps(good))
    del nameless["display_information"]["name"]
    assert errors(nameless)
    short = json.loads(json.dumps(good))
    short["display_information"]["long_description"] = "too short"
    assert errors(short)
    bad_bot = json.loads(json.dumps(good))
    bad_bot["features"]["bot_user"]["display_name"] = "Hero Watch"
    assert errors(bad_bot)
    extra = json.loads(json.dumps(good))
    extra["settings"]["socket_mode"] = True  # a misspelt key
    assert errors(extra)


def _run_everything_that_calls_slack(slack: SlackStandin, tmp_path) -> None:
    """herowatch's every use of Slack: a page with its plot, an acknowledgement, a resolution, doctor's
    check of the receiver, and a Socket Mode connection."""
    cfg = parse_config(
        "watch:\n  - name: hero-a\n    poll_interval: 60s\n"
        "    sim: {seed: 1, step_time: 10s, incidents: [{kind: stall, at: 5m, duration: 25m}]}\n"
        f"receivers:\n  - {{name: oncall, kind: slack, channel: C0ALERTS, base_url: '{slack.api_url}', "
        "timeout: 5s, plots: true}\nroute: {receiver: oncall, group_wait: 0s, group_interval: 1m}\n",
        "t.yaml",
    )
    clock = ManualClock(1_780_000_000.0)
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'hw.db'}", SLACK_APP_TOKEN=APP_TOKEN, slack_api_url=slack.api_url
    )
    service = build_service(cfg, settings, clock, auto_migrate=True)
    service.engine.resume()

    def minutes(n: int) -> None:
        for _ in range(n):
            clock.advance(60)
            service.engine.poll("hero-a")
            service.dispatcher.run_once()

    minutes(22)  # stalled: paged, with its plot
    with service.sessions.begin() as s:
        assert oncall.ack_run(s, sim_id("hero-a"), Actor.slack_user("amy"), None, clock.time())
    minutes(30)  # acknowledged, then resolved
    assert service.dispatcher.notifiers["oncall"].check().ok
    door = service.socket_mode
    assert door is not None
    door.start()
    try:
        slack.socket.wait_open(1)
    finally:
        door.stop()
        service.stop()


def test_the_scopes_are_those_of_the_methods_herowatch_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    with SlackStandin(channels=["C0ALERTS"]) as slack:
        _run_everything_that_calls_slack(slack, tmp_path)
        bot = {c.method for c in slack.calls if c.headers.get("Authorization") == f"Bearer {DEFAULT_TOKEN}"}
        app_level = {c.method for c in slack.calls if c.headers.get("Authorization") == f"Bearer {APP_TOKEN}"}
    assert bot == set(BOT_METHODS), "alerts/notifiers/slack/scopes.py lists what herowatch calls, no more"
    assert app_level == set(APP_METHODS)
    assert set(bot) <= set(DOCUMENTED), f"a method not in Slack's table here: {set(bot) - set(DOCUMENTED)}"
    needed = {scope for method in bot for scope in DOCUMENTED[method]} | {"commands"}
    for doc in (manifest(socket_mode=True), manifest(socket_mode=False, url="https://hw.example.com")):
        assert set(doc["oauth_config"]["scopes"]["bot"]) == needed
