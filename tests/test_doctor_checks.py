"""The receiver checks of `herowatch doctor` against the Slack stand-in (real slack-sdk) and a real HTTP
server: nothing is posted; not_in_channel and missing scopes are reported with their fix; exit 2 for
an unusable config."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from typer.testing import CliRunner

from alerts.notifiers.slack import SlackNotifier
from alerts.notifiers.webhook import WebhookNotifier
from monitor.cli.main import app
from tests.prometheus_server import free_port
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin


def notifier(slack: SlackStandin, channel: str = "C0ALERTS") -> SlackNotifier:
    return SlackNotifier(channel=channel, token=DEFAULT_TOKEN, base_url=slack.api_url, timeout=5)


def test_a_slack_receiver_that_can_deliver_says_so_without_posting():
    with SlackStandin() as slack:
        rep = notifier(slack).check()
        assert rep.ok and rep.problems == []
        assert "member of #c0alerts" in rep.facts and any("files:write" in f for f in rep.facts)
        assert not [c for c in slack.calls if c.method.startswith(("chat.", "files."))], "nothing posted"


def test_not_in_channel_and_missing_scopes_are_reported_with_their_fix():
    with SlackStandin() as slack:
        slack.outside.add("C0ALERTS")
        slack.scopes = ["channels:history", "chat:write"]  # no channels:read, no files:write
        rep = notifier(slack).check()
        assert not rep.ok
        said = {p.what: p for p in rep.problems}
        info = next(p for w, p in said.items() if "lacks channels:read" in w)
        assert not info.fatal, "membership is still checked without it"
        member = next(p for w, p in said.items() if "not_in_channel" in w)
        assert member.fatal and member.fix == "invite it: type /invite @herowatch in C0ALERTS"
        plots = next(p for w, p in said.items() if "lacks files:write" in w)
        assert plots.fatal and "reinstall the app" in plots.fix
        assert slack.calls_to("conversations.history")[0].error == "not_in_channel"


def test_a_refused_token_and_an_unknown_channel():
    with SlackStandin() as slack:
        bad = SlackNotifier(channel="C0ALERTS", token="xoxb-wrong", base_url=slack.api_url, timeout=5)
        [p] = bad.check().problems
        assert "invalid_auth" in p.what and "SLACK_BOT_TOKEN" in p.fix
        [p] = notifier(slack, "C0NOPE").check().problems
        assert "C0NOPE not found" in p.what


class _Hook(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_OPTIONS(self) -> None:  # noqa: N802
        _Hook.seen.append("OPTIONS")
        self.send_response(204 if self.path == "/hook" else 404)
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        _Hook.seen.append("POST")
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:  # noqa: ANN002
        pass


def test_a_webhook_is_checked_without_a_notification():
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        assert WebhookNotifier(base + "/hook").check().ok
        [p] = WebhookNotifier(base + "/nope").check().problems
        assert "HTTP 404" in p.what
        [p] = WebhookNotifier(f"http://127.0.0.1:{free_port()}/hook", timeout=2).check().problems
        assert "cannot be reached" in p.what
        assert "POST" not in _Hook.seen
    finally:
        server.shutdown()


def test_doctor_exits_2_for_an_unusable_config(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("watch:\n  - name: w\n    poll_interval: 0s\n    sim: {}\n")
    r = CliRunner().invoke(app, ["doctor", "--config", str(cfg)])
    assert r.exit_code == 2 and "bad.yaml:3" in r.output
