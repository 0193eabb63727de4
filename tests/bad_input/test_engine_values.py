"""Odd metric values and odd rows through the engine's storage path (a real service over SQLite with a
source that returns them): the engine never raises, a NaN loss fires ``loss_nonfinite``, extreme values
are stored and the API still answers, and duplicated, shuffled or negative-step rows look like no stall,
no restart and no negative step rate."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from alerts.clock import ManualClock
from monitor.samples import RunInfo, Sample
from monitor.sources.base import PollResult
from monitor.storage.models import Alert, Run
from monitor.web.app import create_app
from tests.bad_input.odd_values import HERO_METRICS, ODD
from tests.helpers import make_service

CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    sim: {seed: 1}
"""
RUN = "hero-a"


class RowSource:
    """A source that makes one row every 10 s of clock time, shaped by ``make(i, t) -> Sample | None``,
    and hands each poll's rows through ``deliver(rows, previous_rows) -> rows`` (to shuffle or repeat)."""

    kind = "sim"

    def __init__(self, make, deliver=lambda rows, prev: rows, start: float | None = None) -> None:
        self.make, self.deliver = make, deliver
        self.next_t = start
        self.i = 0
        self.prev: list[Sample] = []

    def poll(self, target, cursors, now):
        if self.next_t is None:
            self.next_t = now
        rows = []
        while self.next_t <= now:
            s = self.make(self.i, self.next_t)
            if s is not None:
                rows.append(s)
            self.i += 1
            self.next_t += 10.0
        out = self.deliver(list(rows), list(self.prev))
        self.prev = rows
        return PollResult(
            samples=out,
            runs=[RunInfo(run=RUN, source="sim", state="running")],
            cursors={RUN: {"i": self.i}},
        )

    def close(self) -> None:
        pass


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'herowatch.db'}"


def serve(sqlite_url: str, source: RowSource):
    clock = ManualClock(1_780_000_000.0)
    service, _ = make_service(sqlite_url, clock, CONFIG)
    service.engine.sources = {"sim": source}
    service.engine.resume()
    return service, clock


def run_for(service, clock, seconds: float) -> None:
    for _ in range(int(seconds // 60)):
        clock.advance(60)
        service.engine.poll("hero-a")  # must not raise
        service.dispatcher.run_once()


def alerts_by_rule(service) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with service.sessions() as s:
        for a in s.scalars(select(Alert)):
            out.setdefault(a.rule, []).append(a.state)
    return out


def the_run(service) -> Run:
    with service.sessions() as s:
        run = s.get(Run, RUN)
        s.expunge(run)
        return run


def test_engine_nan_loss_fires_loss_nonfinite(sqlite_url):
    def make(i, t):
        loss = math.nan if 40 <= i < 45 else 3.0 - i * 1e-4
        return Sample(t, RUN, i, {"train/loss": loss, "throughput/tokens_per_second": 4e5}, state="running")

    service, clock = serve(sqlite_url, RowSource(make))
    try:
        run_for(service, clock, 10 * 60)
        assert "firing" in alerts_by_rule(service).get("loss_nonfinite", []), alerts_by_rule(service)
        assert "progress_stalled" not in alerts_by_rule(service)
    finally:
        service.stop()


@pytest.mark.parametrize("value", ODD, ids=[repr(v) for v in ODD])
def test_engine_stores_extreme_values_and_the_api_still_answers(sqlite_url, value):
    def make(i, t):
        if i < 30:
            return Sample(t, RUN, i, {"train/loss": 3.0, "grad/norm/total": 1.0}, state="running")
        return Sample(t, RUN, i, {m: value for m in HERO_METRICS}, state="running")

    service, clock = serve(sqlite_url, RowSource(make))
    try:
        run_for(service, clock, 12 * 60)
        run = the_run(service)
        assert run.last_step is not None and run.last_step >= 60
        rate = (run.stats or {}).get("steps_per_second")
        assert rate is None or rate > 0
        client = TestClient(create_app(service), base_url="http://localhost")
        for url in ["/api/runs", f"/api/runs/{RUN}", "/api/alerts", "/metrics", "/", f"/runs/{RUN}"]:
            r = client.get(url)
            assert r.status_code < 500, (url, r.status_code, r.text[:500])
        if not math.isfinite(value):
            assert "firing" in alerts_by_rule(service).get("loss_nonfinite", [])
    finally:
        service.stop()


def _steady(i, t):
    return Sample(
        t, RUN, i, {"train/loss": 3.0 - i * 1e-4, "throughput/tokens_per_second": 4e5}, state="running"
    )


DELIVERIES = {
    "shuffled": lambda rows, prev: random.Random(len(rows)).sample(rows, len(rows)),
    "every row twice": lambda rows, prev: [r for r in rows for _ in (0, 1)],
    "the previous poll's rows again": lambda rows, prev: prev + rows,
    "reversed, with repeats": lambda rows, prev: list(reversed(prev + rows + rows)),
}


@pytest.mark.parametrize("deliver", DELIVERIES.values(), ids=DELIVERIES.keys())
def test_engine_duplicate_or_out_of_order_rows_are_no_stall_restart_or_negative_rate(sqlite_url, deliver):
    source = RowSource(_steady, deliver)
    service, clock = serve(sqlite_url, source)
    try:
        run_for(service, clock, 90 * 60)
        fired = alerts_by_rule(service)
        for rule in ("progress_stalled", "run_restarted", "crash_loop", "telemetry_gone"):
            assert rule not in fired, fired
        run = the_run(service)
        assert run.restarts == 0, "a re-delivered row is not a step rewind"
        assert run.last_step == source.i - 1
        rate = run.stats["steps_per_second"]
        assert rate is not None and rate == pytest.approx(0.1, rel=0.05)
    finally:
        service.stop()


def test_engine_negative_steps_count_up_normally(sqlite_url):
    def make(i, t):
        return Sample(t, RUN, i - 1000, {"train/loss": 3.0}, state="running")

    source = RowSource(make)
    service, clock = serve(sqlite_url, source)
    try:
        run_for(service, clock, 30 * 60)
        run = the_run(service)
        assert run.last_step == source.i - 1 - 1000 < 0 and run.restarts == 0
        assert run.stats["steps_per_second"] == pytest.approx(0.1, rel=0.05)
        assert "progress_stalled" not in alerts_by_rule(service)
    finally:
        service.stop()


def test_engine_string_or_bool_metric_values_from_a_source_do_not_crash_the_poll(sqlite_url):
    """A source bug (a str or bool where a float belongs) must not take the engine down."""

    def make(i, t):
        weird = ["1.5", True, None, "NaN"][i % 4]
        return Sample(t, RUN, i, {"train/loss": 3.0, "extra/weird": weird}, state="running")

    service, clock = serve(sqlite_url, RowSource(make))
    try:
        run_for(service, clock, 5 * 60)
    finally:
        service.stop()
