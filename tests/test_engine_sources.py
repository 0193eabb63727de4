"""The sources of a watch, as the engine meets them: polled concurrently (a stuck one holds nothing
up, and raises source_unavailable on time), and trainer clocks that cannot be trusted (a host clock an
hour off neither pages a healthy run nor hides a hang; clock_skew says so)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from sqlalchemy import select

from monitor.sources.base import PollResult
from monitor.storage.models import Alert, Run
from tests.helpers import make_service, sim_id

CONFIG = """
watch:
  - name: hero-a
    poll_interval: 10s
    unavailable_after: 30s
    sim: {seed: 3, step_time: 5s}
    prometheus: {url: "http://127.0.0.1:9", timeout: 1s, retries: 0}
"""


class Blocking:
    """A source whose polls hang until released (a server stuck in retries)."""

    kind = "prometheus"

    def __init__(self) -> None:
        self.release = threading.Event()

    def poll(self, target, cursors, now):
        self.release.wait(30)
        return PollResult()

    def close(self):
        self.release.set()


def alerts(service, rule):
    with service.sessions() as s:
        return [
            (a.state, (a.annotations or {}).get("summary", ""))
            for a in s.scalars(select(Alert).where(Alert.rule == rule))
        ]


def test_a_stuck_source_holds_nothing_up_and_pages_its_outage_on_time(migrated_url, clock):
    service, _ = make_service(migrated_url, clock, CONFIG)
    stuck = Blocking()
    service.engine.sources["prometheus"] = stuck
    service.engine.speed = 10.0  # a poll waits for its sources at most 1 s of real time
    service.engine.resume()
    try:
        steps = []
        for _ in range(5):
            clock.advance(10)
            started = time.monotonic()
            service.engine.poll("hero-a")
            assert time.monotonic() - started < 3, "the stuck source held the cycle up"
            with service.sessions() as s:
                steps.append(s.get(Run, sim_id("hero-a")).last_step)
        assert steps[1] is not None and steps[-1] > steps[1], f"the other source's data went on: {steps}"
        # in flight for 40 s, over its limit (3 x the 1 s timeout, at least two poll intervals: 20 s)
        assert [s for s, _ in alerts(service, "source_unavailable")] == ["pending"]
        for _ in range(3):  # the polls go on (renewing the lease); the health job runs between them
            clock.advance(10)
            service.engine.poll("hero-a")
            clock.advance(1)
            service.engine.check_health("hero-a")
        [(state, summary)] = alerts(service, "source_unavailable")
        assert state == "firing" and "no answer for" in summary and "hero-a" in summary
        stuck.release.set()
        time.sleep(0.2)
        clock.advance(10)
        service.engine.poll("hero-a")  # takes the late result: the source answers again
        assert [s for s, _ in alerts(service, "source_unavailable")] == ["resolved"]
    finally:
        stuck.release.set()
        service.stop()


SKEW_CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    clock_skew_bound: 10m
    sim: {seed: 3, step_time: 10s%s}
"""


class Skewed:
    """The sim source with its rows stamped by a trainer host whose clock is ``offset`` seconds off."""

    kind = "sim"

    def __init__(self, real, offset: float) -> None:
        self.real, self.offset = real, offset

    def poll(self, target, cursors, now):
        res = self.real.poll(target, cursors, now)
        res.samples = [replace(s, t=s.t + self.offset) if s.step is not None else s for s in res.samples]
        return res

    def close(self):
        self.real.close()


def _skewed(db_url, clock, offset, incidents=""):
    from monitor.config.loader import parse_config
    from monitor.service import build_service
    from monitor.settings import Settings

    cfg = parse_config(SKEW_CONFIG % incidents, "t.yaml")
    service = build_service(cfg, Settings(database_url=db_url), clock, auto_migrate=True)
    service.engine.sources["sim"] = Skewed(service.engine.sources["sim"], offset)
    service.engine.resume()
    return service


def _run(service, clock, minutes):
    for _ in range(minutes):
        clock.advance(60)
        service.engine.poll("hero-a")


def test_a_trainer_clock_an_hour_behind_pages_no_stall_and_says_so(migrated_url, clock):
    service = _skewed(migrated_url, clock, -3600)
    try:
        _run(service, clock, 40)
        assert alerts(service, "progress_stalled") == [], "steps an hour old by their stamps are fresh news"
        [(state, summary)] = alerts(service, "clock_skew")
        assert state == "firing" and "after their own timestamps" in summary
    finally:
        service.stop()


def test_a_trainer_clock_an_hour_ahead_hides_no_hang(migrated_url, clock):
    service = _skewed(migrated_url, clock, 3600, ", incidents: [{kind: stall, at: 10m, duration: 2h}]")
    try:
        _run(service, clock, 40)
        assert [s for s, _ in alerts(service, "progress_stalled")] == ["firing"], "the hang at 10m pages"
        [(state, summary)] = alerts(service, "clock_skew")
        assert state == "firing" and "ahead of herowatch's clock" in summary
    finally:
        service.stop()
