"""W&B misbehaving under a running Service: 500s, timeouts, slow answers, malformed JSON, a run deleted
mid-watch. The real wandb client against the stand-in, the whole engine + outbox + console notifier, a
ManualClock. The run keeps training during every outage: afterwards its backlog arrives and nothing may
call it stalled."""

from __future__ import annotations

import pytest

from alerts.clock import ManualClock
from tests.faults.support import (
    alerts,
    assert_exactly_once,
    cycle,
    false_pages,
    notifications,
    rule_states,
    service_for,
)
from tests.standins import wandb_server
from tests.standins.wandb_server import WandbStandin
from tests.wandb_support import ENTITY, KEY, PROJECT

pytestmark = pytest.mark.slow  # a minute or more: handed to a worker early (tests/conftest.py)


def config(url: str, timeout: str = "1s") -> str:
    return f"""
watch:
  - name: hero
    poll_interval: 60s
    wandb: {{entity: {ENTITY}, project: {PROJECT}, tags: [hero], base_url: '{url}', timeout: {timeout},
             retries: 0}}
rules: {{packs: [hero]}}
receivers: [{{name: console, kind: console}}]
route: {{receiver: console, group_wait: 0s}}
"""


class Harness:
    def __init__(self, server: WandbStandin, db_url: str, timeout: str = "1s", runs=("r1",)) -> None:
        self.server = server
        self.runs = list(runs)
        self.step = {r: 0 for r in self.runs}
        self.clock = ManualClock(server.clock)
        for r in self.runs:
            server.add_run(PROJECT, r, tags=["hero"])
        server.clock = self.clock.time()
        self.service, self.out = service_for(
            config(server.url, timeout), db_url, self.clock, WANDB_API_KEY=KEY
        )

    def train(self, seconds: float) -> None:
        """The runs log one step every 10 s of the manual clock (rows stamped with its time)."""
        start = self.clock.time()
        for r in self.runs:
            if r not in self.server.projects[PROJECT]:
                continue
            n = int(seconds // 10)
            rows = [
                {
                    "_step": self.step[r] + i,
                    "_timestamp": start + 10 * (i + 1),
                    "train/loss": 2.0,
                    "grad/norm/total": 0.5,  # the hero pack expects a grad norm of every run
                    "global_step": self.step[r] + i,
                }
                for i in range(n)
            ]
            self.server.log(PROJECT, r, rows)
            self.step[r] += n
        self.clock.advance(seconds)
        self.server.clock = self.clock.time()

    def minute(self, n: int = 1, every: float = 60.0) -> list:
        reports = []
        for _ in range(n):
            self.train(every)
            reports += cycle(self.service)
        return reports


@pytest.fixture
def server():
    with WandbStandin(KEY, entity=ENTITY) as s:
        yield s


@pytest.fixture
def harness(server, sqlite_url):
    h = Harness(server, sqlite_url)
    yield h
    h.service.stop()


def _outage_then_recovery(h: Harness, inject, polls: int, every: float = 60.0) -> None:
    h.minute(20)  # healthy: the stall detector learns the cadence
    assert h.service.engine.source_polls.error("wandb") is None
    assert notifications(h.service) == []
    inject()
    first = h.minute(1)
    assert first[0].errors.get("wandb"), "the fault must reach the engine as a source error"
    assert rule_states(h.service, "source_unavailable") == ["pending"]
    h.minute(polls - 1, every)  # long enough for stall (15 m) and telemetry_gone (10 m) to fire if unfrozen
    assert rule_states(h.service, "source_unavailable") == ["firing"]
    # past the grace (unavailable_page_after, 10m): the outage escalates to a page, once
    assert rule_states(h.service, "source_down") == ["firing"]
    assert false_pages(h.service) == []
    h.server.clear_faults()
    back = h.minute(1)
    assert not back[0].errors, back[0].errors
    assert back[0].samples > 0, "the backlog logged during the outage is read"
    # one clean answer does not end an outage (hysteresis): it ends after ten minutes of them, for the
    # warning and its escalation alike (one incident: they end together)
    assert rule_states(h.service, "source_unavailable") == ["firing"]
    assert rule_states(h.service, "source_down") == ["firing"]
    h.minute(9)
    assert rule_states(h.service, "source_unavailable") == ["firing"]
    assert rule_states(h.service, "source_down") == ["firing"]
    h.minute(1)
    assert rule_states(h.service, "source_unavailable") == ["resolved"]
    assert rule_states(h.service, "source_down") == ["resolved"]
    h.minute(10)
    assert false_pages(h.service) == [], "an outage of W&B became a stalled-run page"
    counts = assert_exactly_once(h.service, h.out)
    assert dict(counts) == {  # one alert for the watch (listing its runs), not one per run
        ("source_unavailable", "hero", "firing"): 1,
        ("source_down", "hero", "firing"): 1,
        ("source_unavailable", "hero", "resolved"): 1,
        ("source_down", "hero", "resolved"): 1,
    }
    [alert] = [a for a in alerts(h.service) if a.rule == "source_unavailable"]
    assert "r1" in alert.annotations["summary"], "the runs it hides are named"


def test_500s(server: WandbStandin, db_url: str) -> None:  # on SQLite and PostgreSQL
    harness = Harness(server, db_url)
    try:
        _outage_then_recovery(harness, lambda: harness.server.fail(500, times=-1), polls=5, every=300.0)
    finally:
        harness.service.stop()


def test_timeouts(harness: Harness) -> None:
    # each poll waits out the 1 s client timeout: few polls, wide clock steps (20 min of outage)
    _outage_then_recovery(harness, lambda: harness.server.slow(3.0, times=-1), polls=5, every=300.0)


def test_dropped_connections(harness: Harness) -> None:
    fault = wandb_server.Fault(drop=True, times=-1)
    _outage_then_recovery(harness, lambda: harness.server.inject(fault), polls=5, every=300.0)


def test_malformed_json(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = {"on": False}
    real_send = wandb_server._Handler._send

    def send(self, status, body, headers={}):  # noqa: B006
        if not broken["on"]:
            return real_send(self, status, body, headers)
        data = b'{"data": {"project": {"runs": {"edges": [ {"node": '  # cut off mid-document
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return len(data)

    monkeypatch.setattr(wandb_server._Handler, "_send", send)

    def inject() -> None:
        broken["on"] = True

    real_clear = harness.server.clear_faults

    def clear() -> None:
        broken["on"] = False
        real_clear()

    harness.server.clear_faults = clear
    _outage_then_recovery(harness, inject, polls=5, every=300.0)


def test_slow_answers_within_the_timeout_are_no_outage(server: WandbStandin, sqlite_url: str) -> None:
    h = Harness(server, sqlite_url, timeout="3s")
    try:
        h.minute(5)
        server.slow(0.5, times=-1)
        for _ in range(3):
            (report,) = h.minute(1)
            assert not report.errors and report.samples > 0
        assert rule_states(h.service, "source_unavailable") == []
        assert notifications(h.service) == [] and false_pages(h.service) == []
    finally:
        h.service.stop()


def test_run_deleted_mid_watch(server: WandbStandin, sqlite_url: str) -> None:
    h = Harness(server, sqlite_url, runs=("keep", "gone"))
    try:
        h.minute(15)
        server.delete_run(PROJECT, "gone")
        h.minute(40)  # far past the stall floor and the telemetry limit
        with h.service.sessions() as s:
            from monitor.storage.models import Run

            states = {r.name: r.state for r in s.query(Run)}
        assert states == {"keep": "running", "gone": "deleted"}
        assert h.service.engine.source_polls.error("wandb") is None
        assert false_pages(h.service) == [], "a deleted run was paged as stalled"
        assert notifications(h.service) == []
    finally:
        h.service.stop()
