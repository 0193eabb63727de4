"""From a simulated stall to Slack and back, through the whole service: engine, pipeline, outbox, the real
slack-sdk against the Slack stand-in. And the watchdog's heartbeat."""

from __future__ import annotations

import io
import json

from alerts.notifiers.console import ConsoleNotifier
from tests.helpers import STALL_CONFIG, make_service, tick
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin
from tests.test_webhook import Hook, hook  # noqa: F401 - the loopback webhook fixture


def text_of(message) -> str:
    return message.text + json.dumps(message.blocks or [])


def test_a_stall_opens_a_thread_and_its_resolution_updates_it(db_url, clock, monkeypatch, tmp_path):
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    with SlackStandin(channels=["C0ALERTS"]) as slack:
        config = STALL_CONFIG + (
            f"receivers:\n  - {{name: oncall, kind: slack, channel: C0ALERTS, base_url: '{slack.api_url}', "
            f"timeout: 5s}}\nroute: {{receiver: oncall, group_wait: 30s, group_interval: 1m}}\n"
        )
        service, _ = make_service(db_url, clock, config, keep_notifiers=True)
        service.engine.resume()
        tick(service, clock, 28 * 60)
        roots = slack.roots("C0ALERTS")
        assert len(roots) == 1, [m.text for m in roots]
        root = roots[0]
        assert "progress_stalled" in text_of(root) or "no new step" in text_of(root)
        assert "hero-a" in text_of(root) and "CRITICAL" in text_of(root).upper()
        plots = [c for c in slack.calls_to("files.completeUploadExternal")]
        assert plots and plots[0].thread_ts == root.ts, "the plot goes into the alert's thread"
        tick(service, clock, 20 * 60)  # the stall ends at 40 min
        root = slack.message("C0ALERTS", root.ts)
        assert "RESOLVED" in text_of(root).upper(), "the root shows the current state"
        replies = slack.thread("C0ALERTS", root.ts)
        assert any("resolved" in text_of(m).lower() for m in replies)
        assert len(slack.roots("C0ALERTS")) == 1, "one thread per incident, nothing posted twice"
        service.stop()


def test_the_watchdog_heartbeat_reaches_its_receiver_once_per_interval(migrated_url, clock, hook):  # noqa: F811
    config = STALL_CONFIG + (
        f"receivers:\n  - {{name: console}}\n  - {{name: deadman, kind: webhook, url: '{hook}'}}\n"
        "watchdog: {receiver: deadman, interval: 5m}\n"
    )
    service, _ = make_service(migrated_url, clock, config, keep_notifiers=True)
    service.dispatcher.notifiers["console"] = ConsoleNotifier(stream=io.StringIO())
    for _ in range(3):  # three beats within one interval: one heartbeat
        service.heartbeat()
        service.dispatcher.run_once()
        clock.advance(60)
    clock.advance(300)
    service.heartbeat()
    service.dispatcher.run_once()
    beats = [body for _, body in Hook.got if body["alerts"][0]["alertname"] == "Watchdog"]
    assert len(beats) == 2
    service.stop()
