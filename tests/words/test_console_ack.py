"""The console receiver (the demo's) prints an acknowledgement as one line about the page it answers,
never as a second FIRING block that reads like a new page."""

from __future__ import annotations

from pathlib import Path

from alerts.clock import ManualClock
from monitor.delivery import oncall
from monitor.delivery.actor import Actor
from tests.helpers import make_service, sim_id, tick

CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    sim:
      seed: 3
      step_time: 10s
      incidents:
        - {kind: stall, at: 5m, duration: 3h}
route: {receiver: console, group_wait: 0s, group_interval: 1m}
"""


def test_acknowledging_prints_an_ack_line_not_a_second_firing_block(tmp_path: Path):
    clock = ManualClock(1_780_000_000.0)
    service, out = make_service(f"sqlite:///{tmp_path / 'hw.db'}", clock, CONFIG)
    service.engine.resume()
    tick(service, clock, 25 * 60)
    paged = out.getvalue()
    assert paged.count("FIRING CRITICAL progress_stalled") == 1, paged
    with service.sessions.begin() as s:
        assert oncall.ack_run(s, sim_id("hero-a"), Actor.slack_user("amy"), None, clock.time())
    tick(service, clock, 3 * 60)
    after = out.getvalue()[len(paged) :]
    assert "FIRING" not in after and "CRITICAL" not in after, after
    assert "acknowledged by amy: progress_stalled run=hero-a" in after, after
