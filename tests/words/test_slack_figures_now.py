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
        incident = "{kind: loss_spike, at: 40m, duration: 2h, magnitude: 1.0}"
        service, minutes = _service(tmp_path, slack, clock, incident)
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
        _, minutes = _service(tmp_path, slack, clock, "{kind: stall, at: 5m, duration: 30m}")
        minutes(45)
        [root] = slack.roots(CHANNEL)
        assert "RESOLVED" in root.text, root.text
        assert re.search(r"Now: last step \d+, \d+s ago, within the limit", str(root.blocks)), root.blocks


def _service(tmp_path: Path, slack: SlackStandin, clock: ManualClock, incident: str):
    cfg = parse_config(_config(slack, incident), "t.yaml")
    service = build_service(
        cfg, Settings(database_url=f"sqlite:///{tmp_path / 'hw.db'}"), clock, auto_migrate=True
    )
    service.engine.resume()

    def minutes(n: int) -> None:
        for _ in range(n):
            clock.advance(60)
            service.engine.poll("hero-a")
            service.dispatcher.run_once()

    return service, minutes


def test_an_alert_held_firing_after_its_condition_ended_says_how_old_its_figures_are(
    tmp_path: Path, monkeypatch
):
    """keep_firing_for (the NaN-loss rule holds 15 minutes) keeps an alert firing after its condition
    ended: acknowledged 8 minutes into the hold, the updated root does not repeat the NaN figures as if
    they were now; it says as of when, what the rule says since, and why it still fires."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    clock = ManualClock(1_780_000_000.0)
    with SlackStandin(channels=[CHANNEL]) as slack:
        service, minutes = _service(tmp_path, slack, clock, "{kind: nan, at: 40m, duration: 10m}")
        minutes(58)  # NaN from ~40m to ~50m, then finite again: held firing since
        [root] = [m for m in slack.roots(CHANNEL) if "loss_nonfinite" in m.text]
        with service.sessions.begin() as s:
            assert oncall.ack_run(s, sim_id("hero-a"), Actor.slack_user("amy"), None, clock.time())
        minutes(2)
        root = slack.message(CHANNEL, root.ts)
        assert root.edits and "Acknowledged" in str(root.blocks), root.blocks
        m = re.search(r"\(as of (\d+)m ago; since then: .+?; held firing 15m after it ends\)", root.text)
        assert m and int(m.group(1)) >= 5, root.text  # the figures' age, as of the update


def test_a_loss_spike_acknowledged_after_the_loss_came_back_says_so_and_resolves_within_a_window(
    tmp_path: Path, monkeypatch
):
    """The raised-floor rule holds an incident through a moment back under the bar (one incident, one
    page), but a loss that is back resolves within one floor window (5m), not half an hour later:
    acknowledged 2 minutes after the recovery, the root says the loss is back below the bar and what
    ends the incident; 10 minutes after the recovery it is resolved, saying for how long it has been
    back."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    clock = ManualClock(1_780_000_000.0)
    with SlackStandin(channels=[CHANNEL]) as slack:
        incident = "{kind: loss_spike, at: 40m, duration: 30m, magnitude: 1.0}"
        service, minutes = _service(tmp_path, slack, clock, incident)
        minutes(72)  # raised from ~40m to ~70m, then back
        [root] = [m for m in slack.roots(CHANNEL) if "loss_spike" in m.text]
        assert "RESOLVED" not in root.text, root.text
        with service.sessions.begin() as s:
            assert oncall.ack_run(s, sim_id("hero-a"), Actor.slack_user("amy"), None, clock.time())
        minutes(1)
        root = slack.message(CHANNEL, root.ts)
        assert root.edits and "Acknowledged" in str(root.blocks), root.blocks
        back = r"train/loss [\d.]+ at step \d+ is back below [\d.]+ for \d+ values"
        assert re.search(back, root.text), root.text
        assert "until it stays back for 5m or 64 values" in root.text and "held firing" not in root.text
        minutes(7)  # 10 minutes after the recovery: a floor window (5m) and the poll have passed
        root = slack.message(CHANNEL, root.ts)
        assert "RESOLVED" in root.text, root.text
        assert re.search(r"has been back below [\d.]+ for [45]m", root.text), root.text
