"""Nothing lost, nothing twice: a delivery process SIGKILLed between claim and send, or after Slack took
the message but before the outbox recorded it, delivers exactly once after a restart. Real processes,
the real slack-sdk against the Slack stand-in, the real PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from sqlalchemy import select

from alerts.grouping import GroupTiming
from alerts.routing import Route
from monitor.delivery.enqueue import Enqueuer
from monitor.storage import migrate
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Alert, Notification
from tests.conftest import REPO
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin


def wait_for(cond, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def slack():
    with SlackStandin(channels=["C0ALERTS"]) as s:
        yield s


@pytest.fixture
def setup(tmp_path, slack, pg_server_url):
    from tests.conftest import _fresh_pg_database

    url, drop = _fresh_pg_database(pg_server_url)
    migrate.upgrade(url)
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(
        f"receivers:\n  - {{name: oncall, kind: slack, channel: C0ALERTS, base_url: '{slack.api_url}',"
        f" timeout: 3s, plots: false}}\nroute: {{receiver: oncall, group_wait: 0s}}\n"
    )
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    now = time.time()
    with sessions.begin() as s:
        a = Alert(
            fingerprint="f1",
            rule="nan_loss",
            kind="non_finite",
            run_id="hero-1",
            severity="critical",
            labels={"alertname": "nan_loss", "run": "hero-1", "severity": "critical"},
            annotations={"summary": "hero-1: train/loss is NaN at step 22900"},
            state="firing",
            active_at=now,
            fired_at=now,
            updated_at=now,
        )
        s.add(a)
        s.flush()
        Enqueuer(Route("oncall", timing=GroupTiming(group_wait=0)), {"oncall": "slack"}).on_transition(
            s, a, "firing", now
        )
    env = {**os.environ, "HEROWATCH_DATABASE_URL": url, "SLACK_BOT_TOKEN": DEFAULT_TOKEN}
    yield cfg, env, sessions
    engine.dispose()
    drop()


def start_worker(cfg, env):
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.outbox_worker", str(cfg), "2"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "worker ready", proc.stderr.read()
    return proc


def status(sessions):
    with sessions() as s:
        return s.scalars(select(Notification)).one().status


def posts(slack):
    return [m for m in slack.roots("C0ALERTS") if "nan_loss" in (m.text or "") or "NaN" in (m.text or "")]


@pytest.mark.parametrize("moment", ["after Slack took the message", "between claim and send"])
def test_sigkill_then_restart_delivers_exactly_once(setup, slack, moment):
    cfg, env, sessions = setup
    if moment == "after Slack took the message":
        # Slack stores the message, then the answer hangs: the worker dies before recording it.
        slack.slow(30, methods=["chat.postMessage"], after_effect=True)
        hung_on = "chat.postMessage"
    else:
        # The duplicate check before posting hangs: the worker dies after its claim, before any post.
        slack.slow(30, methods=["conversations.history"])
        hung_on = "conversations.history"
    first = start_worker(cfg, env)
    try:
        wait_for(lambda: slack.calls_to(hung_on), what=f"{hung_on} to be called")
        assert status(sessions) == "sending", "claimed, not yet recorded"
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    slack.clear_faults()
    expected_before = 1 if moment == "after Slack took the message" else 0
    assert len(posts(slack)) == expected_before
    second = start_worker(cfg, env)
    try:
        wait_for(lambda: status(sessions) == "sent", what="the notification to be sent after the restart")
    finally:
        second.send_signal(signal.SIGKILL)
        second.wait(10)
    assert len(posts(slack)) == 1, "exactly one message in the channel"
    with sessions() as s:
        row = s.scalars(select(Notification)).one()
        assert row.external_ref and row.external_ref.startswith("C0ALERTS:")
        assert row.attempts == 1
