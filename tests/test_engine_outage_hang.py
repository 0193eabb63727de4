"""A hang and a source outage, the whole cycle on the injected clock (docs/reliability.md, "a hang that
began before an outage"): a simulated run stepping every 10 s (or 100 s) whose source cannot be read from
minute 30 to 40 of its life.

- It stops stepping at minute 20: the silence was seen for 10 minutes while the source answered, the
  outage cannot explain it. It pages at the first clean answer (minute 40), not once the outage settled
  and its backlog had its time (minute 50, as before).
- It keeps stepping through the outage: the steps of the outage come as a backlog once the source
  answers; no stall page.
- It stops stepping at minute 32, during the outage: that silence may be the outage's (the backlog may
  still come), so it waits for the settling and the backlog as before: the page at minute 50.

The sim's times count from the first poll, one poll interval (1 minute) after the clock's start."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from monitor.storage.models import Alert, AlertTransition
from tests.helpers import make_service, tick

M = 60.0
START = 1_780_000_000.0  # the ``clock`` fixture's start
RULE = "progress_stalled"


def config(stall_at: int | None, outage: bool = True, step: str = "10s") -> str:
    incidents = []
    if stall_at is not None:
        incidents.append(f"{{kind: stall, at: {stall_at}m, duration: 30m}}")
    if outage:
        incidents.append("{kind: outage, at: 30m, duration: 10m}")
    listed = "".join(f"\n        - {i}" for i in incidents) or " []"
    return f"""
watch:
  - name: hero-oh
    poll_interval: 60s
    sim:
      seed: 6
      step_time: {step}
      checkpoint_every: 1000
      eval_every: 1000
      incidents:{listed}
"""


def stall_fired(service) -> list[float]:
    """When ``progress_stalled`` fired, in minutes of the run's life (the sim's clock)."""
    with service.sessions() as s:
        rows = s.execute(
            select(AlertTransition.at)
            .join(Alert, Alert.id == AlertTransition.alert_id)
            .where(Alert.rule == RULE, AlertTransition.to_state == "firing")
        )
        return sorted((at - START) / M - 1 for (at,) in rows)


def lived(db_url: str, clock, text: str, minutes: int = 60) -> tuple[list[float], str]:
    service, out = make_service(db_url, clock, text)
    service.engine.resume()
    try:
        tick(service, clock, minutes * M)
        return stall_fired(service), out.getvalue()
    finally:
        service.stop()


@pytest.mark.parametrize("step", ["10s", "100s"])
def test_a_hang_older_than_the_outage_pages_when_the_source_answers_again(db_url, clock, step):
    fired, out = lived(db_url, clock, config(stall_at=20, step=step))
    # measured: 40.0 min at 10 s and at 100 s a step (was 50 at 10 s: the settling, then the backlog)
    assert len(fired) == 1 and 40 <= fired[0] <= 41, fired
    assert f"FIRING CRITICAL {RULE} run=hero-oh" in out, "the page went out"


def test_without_the_outage_the_same_hang_pages_after_the_stall_limit(db_url, clock):
    fired, _ = lived(db_url, clock, config(stall_at=20, outage=False), minutes=45)
    assert len(fired) == 1 and 35 <= fired[0] <= 37, fired  # 20 + the 15-minute limit: the outage costs ~4


def test_a_run_stepping_through_the_outage_does_not_page(db_url, clock):
    fired, out = lived(db_url, clock, config(stall_at=None), minutes=70)
    assert fired == [], "the backlog read after the outage shows the run kept stepping"
    assert RULE not in out


def test_a_hang_that_began_during_the_outage_waits_for_the_settling_and_the_backlog(db_url, clock):
    fired, _ = lived(db_url, clock, config(stall_at=32), minutes=65)
    # as before: the source answers at 40, settles for 10 minutes, the backlog's wait ends with it
    assert len(fired) == 1 and 50 <= fired[0] <= 51, fired
