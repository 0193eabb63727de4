"""What Slack shows after an update is true as of the update: a loss spike acknowledged 20 minutes in
says it has stayed raised for those 20 minutes, not the 5 minutes it had when it paged; a stall's
resolution reads "last step N, 9s ago". Real slack-sdk against the Slack stand-in."""

from __future__ import annotations

import re
from pathlib import Path

from alerts.clock import ManualClock
from monitor.config.loader import parse_config
from monitor.delivery import oncall
from monitor.delivery.actor import Actor
from monitor.service import build_service
from monitor.settings import Settings
from tests.helpers import sim_id
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin

CHANNEL = "C0ALERTS"


def _config(slack: SlackStandin, incident: str) -> str:
    return (
        "watch:\n  - name: hero-a\n    poll_interval: 60s\n"
        f"    sim: {{seed: 3, step_time: 10s, incidents: [{incident}]}}\n"
        f"receivers:\n  - {{name: oncall, kind: slack, channel: {CHANNEL}, base_url: '{slack.api_url}', "
        "timeout: 5s, plots: false}\n"
        "route: {receiver: oncall, group_wait: 0s, group_interval: 1m}\n"
    )


def _minutes(text: str) -> int:
    m = re.search(r"has stayed above [\d.]+ for (?:\d+ steps, )?(?:(\d+)h)?(\d+)m", text)
    assert m, text
    return int(m.group(1) or 0) * 60 + int(m.group(2))


def test_an_acknowledged_loss_spike_says_how_long_it_has_been_raised_as_of_the_ack(
    tmp_path: Path, monkeypatch
):
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    clock = ManualClock(1_780_000_000.0)
    with SlackStandin(channels=[CHANNEL]) as slack:
        cfg = parse_config(
            _config(slack, "{kind: loss_spike, at: 40m, duration: 2h, magnitude: 1.0}"), "t.yaml"
        )
        settings = Settings(database_url=f"sqlite:///{tmp_path / 'hw.db'}")
        service = build_service(cfg, settings, clock, auto_migrate=True)
        service.engine.resume()

        def minutes(n: int) -> None:
            for _ in range(n):
                clock.advance(60)
                service.engine.poll("hero-a")
                service.dispatcher.run_once()

        minutes(50)
        [root] = slack.roots(CHANNEL)
        assert "loss_spike" in root.text and _minutes(root.text) <= 8, root.text
        minutes(20)
        with service.sessions.begin() as s:
            assert oncall.ack_run(s, sim_id("hero-a"), Actor.slack_user("amy"), None, clock.time())
        minutes(2)
        root = slack.message(CHANNEL, root.ts)
        assert root.edits, "the root was not edited on the ack"
        assert "Acknowledged" in str(root.blocks)
        assert _minutes(root.text) >= 25, root.text  # raised since ~40m, acknowledged at ~70m


def test_a_stall_resolution_names_the_last_step_and_its_age_apart(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    clock = ManualClock(1_780_000_000.0)
    with SlackStandin(channels=[CHANNEL]) as slack:
        cfg = parse_config(_config(slack, "{kind: stall, at: 5m, duration: 30m}"), "t.yaml")
        service = build_service(
            cfg, Settings(database_url=f"sqlite:///{tmp_path / 'hw.db'}"), clock, auto_migrate=True
        )
        service.engine.resume()
        for _ in range(45):
            clock.advance(60)
            service.engine.poll("hero-a")
            service.dispatcher.run_once()
        [root] = slack.roots(CHANNEL)
        assert "RESOLVED" in root.text, root.text
        assert re.search(r"Now: last step \d+, \d+s ago, within the limit", str(root.blocks)), root.blocks


def test_an_alert_held_firing_after_its_condition_ended_says_how_old_its_figures_are(
    tmp_path: Path, monkeypatch
):
    """keep_firing_for (the raised-floor rule holds 30 minutes) keeps an alert firing after its condition
    ended: acknowledged 15 minutes into the hold, the updated root does not repeat "has stayed above ...
    for 29m46s" as if it were now; it says as of when, what the rule says since, and why it still fires."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    clock = ManualClock(1_780_000_000.0)
    with SlackStandin(channels=[CHANNEL]) as slack:
        incident = "{kind: loss_spike, at: 40m, duration: 30m, magnitude: 1.0}"
        cfg = parse_config(_config(slack, incident), "t.yaml")
        settings = Settings(database_url=f"sqlite:///{tmp_path / 'hw.db'}")
        service = build_service(cfg, settings, clock, auto_migrate=True)
        service.engine.resume()

        def minutes(n: int) -> None:
            for _ in range(n):
                clock.advance(60)
                service.engine.poll("hero-a")
                service.dispatcher.run_once()

        minutes(85)  # raised from ~40m to ~70m, then back: held firing since
        [root] = [m for m in slack.roots(CHANNEL) if "loss_spike" in m.text]
        with service.sessions.begin() as s:
            assert oncall.ack_run(s, sim_id("hero-a"), Actor.slack_user("amy"), None, clock.time())
        minutes(2)
        root = slack.message(CHANNEL, root.ts)
        assert root.edits and "Acknowledged" in str(root.blocks), root.blocks
        m = re.search(r"\(as of (\d+)m ago; since then: train/loss floor [\d.]+ is back near", root.text)
        assert m and int(m.group(1)) >= 10, root.text  # the figures' age, as of the update
        assert "held firing 30m after it ends" in root.text, root.text
