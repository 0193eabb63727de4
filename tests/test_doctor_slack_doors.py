"""`herowatch doctor` on Slack's way in (the buttons and /herowatch): Socket Mode is checked by connecting
once to the Slack stand-in (real slack-sdk and websocket-client), the HTTP endpoint by its settings;
neither set, with buttons on, is a warning."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from monitor.cli.main import app
from tests.standins.slack import APP_TOKEN, DEFAULT_TOKEN, SlackStandin

SUBJECT = "slack buttons and /herowatch"


def doctor(
    tmp_path, slack: SlackStandin, env: dict[str, str], external_url: str | None = None
) -> tuple[int, dict]:
    server = f"server: {{external_url: '{external_url}'}}\n" if external_url else ""
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(
        f"{server}watch:\n  - {{name: hero-a, sim: {{}}}}\n"
        f"receivers:\n  - {{name: oncall, kind: slack, channel: C0ALERTS, base_url: '{slack.api_url}'}}\n"
        "route: {receiver: oncall}\n"
    )
    base = {"SLACK_BOT_TOKEN": DEFAULT_TOKEN, "HEROWATCH_SLACK_API_URL": slack.api_url, "COLUMNS": "80"}
    r = CliRunner().invoke(app, ["doctor", "--config", str(cfg), "--json"], env={**base, **env})
    return r.exit_code, json.loads(r.stdout) if r.stdout.startswith("{") else {"stderr": r.stderr}


def items(report: dict) -> list[tuple[str, str, str]]:
    return [
        (i["level"], i["subject"], i["what"]) for i in report["items"] if i["subject"].startswith(SUBJECT)
    ]


def test_socket_mode_that_connects(tmp_path):
    with SlackStandin() as slack:
        code, report = doctor(tmp_path, slack, {"SLACK_APP_TOKEN": APP_TOKEN})
        [(level, subject, what)] = items(report)
        assert (level, subject) == ("ok", f"{SUBJECT} (Socket Mode)") and what.startswith(
            "Socket Mode connects"
        )
        assert code == 0, report
        [conn] = slack.socket.connections
        slack.socket.wait(lambda: not conn.open, 10, "doctor to close its connection")
        assert slack.socket.envelopes == {} and not slack.calls_to("chat.postMessage"), "nothing sent"


@pytest.mark.parametrize(
    "token, says",
    [
        ("xapp-1-A0HEROWATCH-1-someone-elses", "Slack refuses SLACK_APP_TOKEN (invalid_auth"),
    ],
)
def test_a_refused_app_token(tmp_path, token, says):
    with SlackStandin() as slack:
        code, report = doctor(tmp_path, slack, {"SLACK_APP_TOKEN": token})
        [(level, _, what)] = items(report)
        assert level == "fail" and says in what and code == 1, report


def test_the_bot_token_in_place_of_the_app_token_is_a_settings_error(tmp_path):
    with SlackStandin() as slack:
        code, report = doctor(tmp_path, slack, {"SLACK_APP_TOKEN": DEFAULT_TOKEN})
        assert code == 2 and "SLACK_APP_TOKEN is not an app-level token (xapp-...)" in report["stderr"]
        assert DEFAULT_TOKEN not in report["stderr"], "a secret is never echoed"


def test_a_websocket_that_does_not_open(tmp_path):
    with SlackStandin() as slack:
        slack.socket.stop()  # Slack hands out URLs, but the websocket is blocked on the way
        code, report = doctor(tmp_path, slack, {"SLACK_APP_TOKEN": APP_TOKEN})
        [(level, _, what)] = items(report)
        assert level == "fail" and "its websocket does not open" in what and code == 1, report


@pytest.mark.parametrize(
    "external_url, level, says",
    [
        (
            "https://herowatch.example.org",
            "ok",
            "Slack posts to https://herowatch.example.org/api/slack/interactions",
        ),
        ("http://herowatch.example.org", "fail", "Slack only calls https:// URLs"),
        (None, "warn", "not server.external_url"),
    ],
)
def test_the_http_endpoint_by_its_settings(tmp_path, external_url, level, says):
    with SlackStandin() as slack:
        _, report = doctor(tmp_path, slack, {"SLACK_SIGNING_SECRET": "s3cret-for-tests"}, external_url)
        [(got, subject, what)] = items(report)
        assert (got, subject) == (level, f"{SUBJECT} (HTTP)") and says in what, report


def test_buttons_with_no_way_in_are_a_warning(tmp_path):
    with SlackStandin() as slack:
        code, report = doctor(tmp_path, slack, {})
        [(level, _, what)] = items(report)
        assert level == "warn" and "buttons of oncall would do nothing" in what
        fix = next(i["fix"] for i in report["items"] if i["subject"] == SUBJECT)
        assert "SLACK_APP_TOKEN" in fix and "herowatch slack manifest" in fix
