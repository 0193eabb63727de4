"""The Socket Mode door (monitor/web/slack/socket_mode.py) in one process, with the real slack-sdk client
against the Slack stand-in's Socket Mode: what the live tests (tests/live/test_slack_socket_live.py)
cannot stage with ``herowatch serve``: a database slower than Slack's 3 seconds, a database that fails,
another workspace, buttons that are not herowatch's, events herowatch does not subscribe to."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from sqlalchemy import create_engine, select, text

from alerts.clock import ManualClock
from alerts.notifiers.slack.interactions import ACK
from monitor.config.loader import parse_config
from monitor.service import Service, build_service
from monitor.settings import Settings
from monitor.storage.models import Alert, Silence
from tests.standins.slack import APP_TOKEN, DEFAULT_TOKEN, SlackStandin
from tests.standins.slack.records import StoredMessage

CHANNEL = "C0ONCALL"


@dataclass
class Setup:
    service: Service
    slack: SlackStandin
    clock: ManualClock
    root: StoredMessage  # herowatch's alert message, with its buttons

    def silences(self) -> list[Silence]:
        with self.service.sessions() as s:
            return list(s.scalars(select(Silence)))


@contextmanager
def stalled(db_url: str, monkeypatch: pytest.MonkeyPatch, **settings: str) -> Iterator[Setup]:
    """A service whose run has been stalled 20 minutes (one alert in Slack), its Socket Mode door open."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
    with SlackStandin(channels=[CHANNEL]) as slack:
        cfg = parse_config(
            "watch:\n  - name: hero-a\n    poll_interval: 60s\n"
            "    sim: {seed: 1, step_time: 10s, incidents: [{kind: stall, at: 5m, duration: 3h}]}\n"
            f"receivers:\n  - {{name: oncall, kind: slack, channel: {CHANNEL}, base_url: '{slack.api_url}', "
            "timeout: 5s, plots: false}\nroute: {receiver: oncall, group_wait: 0s, group_interval: 1m}\n",
            "t.yaml",
        )
        clock = ManualClock(1_780_000_000.0)
        conf = Settings(
            database_url=db_url, SLACK_APP_TOKEN=APP_TOKEN, slack_api_url=slack.api_url, **settings
        )
        service = build_service(cfg, conf, clock, auto_migrate=True)
        service.engine.resume()
        for _ in range(25):
            clock.advance(60)
            service.engine.poll("hero-a")
            service.dispatcher.run_once()
        [root] = slack.roots(CHANNEL)
        assert service.socket_mode is not None
        service.socket_mode.start()
        try:
            slack.socket.wait_open(1)
            yield Setup(service, slack, clock, root)
        finally:
            service.socket_mode.stop()
            service.stop()


def test_a_database_slower_than_slacks_3s_still_gets_the_envelope_acknowledged_in_time(pg_url, monkeypatch):
    with stalled(pg_url, monkeypatch) as it:
        blocker = create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
        with blocker.begin() as conn:  # the claim table is locked for 4 s: the claim waits behind it
            conn.execute(text("LOCK TABLE slack_deliveries IN EXCLUSIVE MODE"))
            env = it.slack.command("silence hero-a 2h restoring a checkpoint")
            ack = it.slack.socket.wait_acked(env, timeout=10)
            waited = ack.at - env.last_sent
            time.sleep(4 - waited)
        blocker.dispose()
        assert waited < 3.0, f"acknowledged {waited:.2f}s after delivery: Slack allows 3"
        assert ack.payload is None, "the answer was not ready: an empty acknowledgement"
        answers = it.slack.socket.wait(lambda: it.slack.responses_to(env.payload), 15, "the answer")
        assert answers[0]["response_type"] == "ephemeral" and "Silenced hero-a for 2h" in answers[0]["text"]
        assert len(it.silences()) == 1 and len(env.deliveries) == 1


def test_a_failing_database_changes_nothing_and_says_so(pg_url, monkeypatch):
    with stalled(pg_url, monkeypatch) as it:
        admin = create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
        with admin.begin() as conn:
            conn.execute(text("ALTER TABLE slack_deliveries RENAME TO slack_deliveries_gone"))
        env = it.slack.command("silence hero-a 2h restoring a checkpoint")
        ack = it.slack.socket.wait_acked(env)
        assert "could not do this, nothing changed" in ack.payload["text"], ack.payload
        assert it.silences() == []
        with admin.begin() as conn:
            conn.execute(text("ALTER TABLE slack_deliveries_gone RENAME TO slack_deliveries"))
        admin.dispose()
        env = it.slack.command("silence hero-a 2h restoring a checkpoint")
        assert "Silenced hero-a" in it.slack.socket.wait_acked(env).payload["text"]
        assert len(it.silences()) == 1


def test_another_workspace_is_refused(tmp_path, monkeypatch):
    with stalled(f"sqlite:///{tmp_path / 'hw.db'}", monkeypatch, slack_team_id="T0SOMEONEELSE") as it:
        env = it.slack.command("silence hero-a 2h not ours")
        assert "not the one herowatch serves" in it.slack.socket.wait_acked(env).payload["text"]
        click = it.slack.click(it.root, ACK)
        it.slack.socket.wait_acked(click)
        answers = it.slack.socket.wait(lambda: it.slack.responses_to(click.payload), 10, "the refusal")
        assert "not the one herowatch serves" in answers[0]["text"]
        assert it.silences() == []
        with it.service.sessions() as s:
            assert [a.acked_by for a in s.scalars(select(Alert))] == [None]


def test_what_is_not_herowatchs_is_acknowledged_and_left_alone(tmp_path, monkeypatch):
    with stalled(f"sqlite:///{tmp_path / 'hw.db'}", monkeypatch) as it:
        other_app = it.slack.click_payload(it.root, ACK)
        other_app["actions"][0]["action_id"] = "someone_elses_button"
        sent = [
            it.slack.socket.send("interactive", other_app),
            it.slack.socket.send("events_api", {"type": "event_callback", "event": {"type": "app_mention"}}),
            it.slack.socket.send("interactive", {"type": "view_submission", "view": {}}),
        ]
        for env in sent:
            assert it.slack.socket.wait_acked(env).payload is None
        forged = it.slack.click_payload(it.root, ACK)  # herowatch's button value, another message
        forged["container"]["message_ts"] = forged["message"]["ts"] = "1780000000.999999"
        env = it.slack.socket.send("interactive", forged)
        it.slack.socket.wait_acked(env)
        answers = it.slack.socket.wait(lambda: it.slack.responses_to(forged), 10, "the refusal")
        assert "not on herowatch's message" in answers[0]["text"]
        time.sleep(0.5)
        assert it.slack.responses_to(other_app) == []
        with it.service.sessions() as s:
            assert [a.acked_by for a in s.scalars(select(Alert))] == [None]


def test_a_silent_network_path_is_replaced(tmp_path, monkeypatch):
    """A connection that stays open but carries nothing (a NAT that forgot it) raises no error at either
    end; herowatch notices its pings go unanswered and opens a new connection."""
    from monitor.web.slack.socket_mode import SlackPorts, SocketMode

    with stalled(f"sqlite:///{tmp_path / 'hw.db'}", monkeypatch) as it:
        it.service.socket_mode.stop()
        it.slack.socket.wait(lambda: not it.slack.socket.open_connections(), 10, "the first door gone")
        relay = it.slack.socket.with_relay()
        door = SocketMode(
            app_token=APP_TOKEN,
            api_url=it.slack.api_url,
            ports=SlackPorts.of(it.service.api_context()),
            worker="test:1",
            ping_interval=1.0,
        )
        door.start()
        try:
            [conn] = it.slack.socket.wait_open(1)
            assert "1 run" in it.slack.socket.wait_acked(it.slack.command("status")).payload["text"]
            silenced = time.monotonic()
            relay.silence_all()
            it.slack.socket.wait(
                lambda: [c for c in it.slack.socket.open_connections() if c.number > conn.number],
                30,
                "a new one",
            )
            took = time.monotonic() - silenced
            print(f"\nsilent path replaced after {took:.1f}s (pings every 1s)")
            assert 2.5 <= took < 10
            env = it.slack.command("status")
            assert "1 run" in it.slack.socket.wait_acked(env).payload["text"]
        finally:
            door.stop()


def test_slack_unreachable_at_start_is_retried_until_it_answers(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="monitor.web.slack.socket_mode")  # whatever the root's level
    with stalled(f"sqlite:///{tmp_path / 'hw.db'}", monkeypatch) as it:
        it.service.socket_mode.stop()
        it.slack.socket.wait(lambda: not it.slack.socket.open_connections(), 10, "the first door gone")
        it.slack.fail(500, times=2, methods=["apps.connections.open"])  # Slack's API down a while
        door = type(it.service.socket_mode)(
            app_token=APP_TOKEN, api_url=it.slack.api_url, ports=it.service.socket_mode.ports, worker="test:2"
        )
        started = time.monotonic()
        door.start()
        try:
            it.slack.socket.wait_open(1, 30)
            print(f"\nconnected {time.monotonic() - started:.1f}s after start, Slack's API down for 2 calls")
            failed = [c for c in it.slack.calls_to("apps.connections.open") if c.status == 500]
            assert len(failed) == 2
            said = [
                r.getMessage() for r in caplog.records if "cannot open a Slack Socket Mode" in r.getMessage()
            ]
            assert len(said) == 2 and "again in 1s" in said[0] and "again in 2s" in said[1], said
            assert "1 run" in it.slack.socket.wait_acked(it.slack.command("status")).payload["text"]
        finally:
            door.stop()


def test_a_door_stopped_while_it_opens_leaves_no_connection_open(tmp_path, monkeypatch):
    """Stopped at any moment of its opening (before the handshake, during it, just after), the door leaves
    nothing open at Slack: a connection left open unread would be sent envelopes no one answers."""
    with stalled(f"sqlite:///{tmp_path / 'hw.db'}", monkeypatch) as it:
        it.service.socket_mode.stop()
        it.slack.socket.wait(lambda: not it.slack.socket.open_connections(), 10, "the first door gone")
        for n, after in enumerate((0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8)):
            door = type(it.service.socket_mode)(
                app_token=APP_TOKEN,
                api_url=it.slack.api_url,
                ports=it.service.socket_mode.ports,
                worker=f"t:{n}",
            )
            door.start()
            time.sleep(after)
            t0 = time.monotonic()
            door.stop()
            stopping = time.monotonic() - t0
            it.slack.socket.wait(lambda: not it.slack.socket.open_connections(), 5, f"stopped after {after}s")
            # bounded: a connection request under way (up to 5 s of join), then its handshake (up to 5 s)
            assert stopping < 15, f"stop() took {stopping:.1f}s"
