"""herowatch itself interrupted: the clock jumping hours forward in one go, and a real
``herowatch serve`` process SIGKILLed while it polls, then restarted on the same database.

(SIGKILL mid-send, between claim and send or after Slack took the message, is covered by
tests/test_exactly_once.py and not repeated here.)"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from alerts.clock import ManualClock
from tests.conftest import REPO
from tests.faults.support import alerts, cycle, notifications, service_for, wait_for

pytestmark = pytest.mark.slow  # a minute or more: handed to a worker early (tests/conftest.py)

HEALTHY = """
watch:
  - name: hero-a
    poll_interval: 60s
    sim: {seed: 3, step_time: 10s, checkpoint_every: 50, checkpoint_pause: 60s}
  - name: hero-b
    poll_interval: 60s
    sim: {seed: 4, step_time: 12s}
rules: {packs: [hero]}
receivers: [{name: console, kind: console}]
route: {receiver: console, group_wait: 0s}
"""


def test_clock_jumps_hours_forward(sqlite_url: str) -> None:
    clock = ManualClock(1_780_000_000.0)
    service, out = service_for(HEALTHY, sqlite_url, clock)
    try:
        for _ in range(30):
            clock.advance(60)
            cycle(service)
        assert alerts(service) == []
        clock.advance(6 * 3600)  # a suspended VM, an NTP step: six hours in one go
        reports = cycle(service)
        assert all(not r.errors for r in reports)
        for _ in range(30):
            clock.advance(60)
            cycle(service)
        assert [f"{a.rule} {a.run_id} {a.state}" for a in alerts(service)] == [], "bogus alerts after a jump"
        assert notifications(service) == [] and out.getvalue() == ""
    finally:
        service.stop()


STALLING = """
watch:
  - name: crashy
    poll_interval: 1s
    sim: {step_time: 1s, incidents: [{kind: stall, at: 3s, duration: 1h}]}
    rules:
      overrides:
        progress_stalled: {floor: 4s, k: 2}
rules: {packs: [hero]}
receivers: [{name: console, kind: console}]
route: {receiver: console, group_wait: 0s}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(config: Path, db: str, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "HEROWATCH_DATABASE_URL": db,
        "HEROWATCH_LISTEN": f"127.0.0.1:{_free_port()}",
        "PYTHONPATH": str(REPO),
    }
    with log.open("wb") as f:
        return subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", "serve", "--config", str(config)],
            cwd=REPO,
            env=env,
            stdout=f,
            stderr=subprocess.STDOUT,
        )


def test_sigkill_mid_poll_then_restart_does_not_renotify(tmp_path: Path) -> None:
    config = tmp_path / "hw.yaml"
    config.write_text(STALLING)
    db = f"sqlite:///{tmp_path / 'hw.db'}"
    probe = create_engine(db)

    def q(sql: str):
        with probe.connect() as c:
            return c.execute(text(sql)).all()

    def fired():
        rows = q(
            "select n.status from notifications n join alerts a on a.id = n.alert_id "
            "where a.rule = 'progress_stalled' and n.kind = 'change'"
        )
        return rows == [("sent",)]

    def polled_at() -> float:
        rows = q("select last_polled_at from runs where id = 'sim:crashy/crashy'")
        if not rows or rows[0][0] is None:
            return 0.0
        v = rows[0][0]
        return v if isinstance(v, float) else datetime.fromisoformat(str(v)).timestamp()

    first = _serve(config, db, tmp_path / "first.log")
    try:
        wait_for(fired, 75, "progress_stalled to fire and be printed by the first process")
        before = polled_at()
        wait_for(lambda: polled_at() > before, 10, "the next poll")  # kill right after a poll started
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(10)
    (alert_before,) = q("select id, state from alerts where rule = 'progress_stalled'")
    assert alert_before[1] == "firing"
    log1 = (tmp_path / "first.log").read_text()
    assert log1.count("FIRING CRITICAL progress_stalled") == 1, log1[-3000:]

    second = _serve(config, db, tmp_path / "second.log")
    try:
        t0 = polled_at()
        wait_for(lambda: polled_at() >= t0 + 4, 30, "the restarted process to poll several times")
    finally:
        second.send_signal(signal.SIGKILL)
        second.wait(10)
    log2 = (tmp_path / "second.log").read_text()
    assert "progress_stalled" not in log2, "the firing alert was notified again after the restart:\n" + log2
    assert q("select id, state from alerts where rule = 'progress_stalled'") == [tuple(alert_before)]
    assert q(
        "select count(*) from notifications n join alerts a on a.id = n.alert_id"
        " where a.rule = 'progress_stalled'"
    ) == [(1,)]
    assert q("select count(*) from notifications where status not in ('sent', 'merged')") == [(0,)]
    probe.dispose()
