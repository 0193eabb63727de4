"""herowatch's own metrics behind the Grafana dashboard: source errors and poll delays from the
scheduler's events, notification send latency by outcome, the outbox's oldest waiting notification."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from types import SimpleNamespace

from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_JOB_MISSED
from fastapi.testclient import TestClient

from alerts.notifiers.base import SendResult
from monitor.delivery.send_stats import BUCKETS, SendLatency
from monitor.web.app import create_app
from monitor.web.poll_counter import PollCounter
from tests.dashboard.support import build
from tests.helpers import tick
from tests.test_api_health import samples


def event(code: int, job: str, scheduled: float, errors: dict | None = None) -> SimpleNamespace:
    report = SimpleNamespace(errors=errors or {})
    when = datetime.fromtimestamp(scheduled, UTC)
    return SimpleNamespace(code=code, job_id=job, scheduled_run_time=when, retval=report)


def test_poll_events_give_source_errors_and_how_late_each_cycle_finished():
    wall = [1000.0]
    c = PollCounter(wall=lambda: wall[0])
    c.on_event(event(EVENT_JOB_EXECUTED, "poll:a", 999.8))  # on time
    wall[0] = 1100.0
    c.on_event(event(EVENT_JOB_EXECUTED, "poll:a", 1060.0, {"wandb": "HTTP 503"}))  # 40 s late, W&B failed
    c.on_event(event(EVENT_JOB_MISSED, "poll:a", 1050.0))
    c.on_event(event(EVENT_JOB_EXECUTED, "outbox", 1000.0))  # not a poll
    assert c.counts() == {("a", "ran"): 2, ("a", "missed"): 1}
    assert c.source_errors() == {"wandb": 1}
    buckets, total = c.delays()["a"]
    assert abs(total - 40.2) < 1e-9  # 0.2 s and 40 s late
    cumulative = dict(buckets)
    assert (
        cumulative["0.5"] == 1
        and cumulative["30.0"] == 1
        and cumulative["60.0"] == 2
        and cumulative["+Inf"] == 2
    )


def test_send_latency_is_a_cumulative_histogram_per_receiver_kind_and_outcome():
    s = SendLatency({"oncall": "slack"})
    for seconds in (0.03, 0.2, 0.2, 7.0, 99.0):
        s.observe("oncall", seconds, "sent")
    s.observe("oncall", 10.0, "retry")
    h = s.snapshot()[("oncall", "slack", "sent")]
    pairs = dict(h.cumulative())
    assert pairs["0.05"] == 1 and pairs["0.25"] == 3 and pairs["10.0"] == 4 and pairs["+Inf"] == 5
    assert len(pairs) == len(BUCKETS) + 1 and h.total == 0.03 + 0.4 + 7.0 + 99.0
    assert s.snapshot()[("oncall", "slack", "retry")].n == 1


class Down:
    def send(self, notification):  # noqa: ANN001, ANN201
        return SendResult.transient("slack is down")


def test_an_undelivered_page_ages_in_the_outbox_and_its_attempts_are_timed(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock)
    service.dispatcher.notifiers = {"console": Down()}
    tick(service, clock, 30 * 60, every=120)  # hero-a's stall pages; every attempt fails
    first = service.outbox.oldest_waiting()
    assert first is not None
    clock.advance(600)
    m = samples(TestClient(create_app(service), base_url="http://localhost").get("/metrics").text)
    age = m[("herowatch_outbox_oldest_age_seconds", frozenset())]
    assert age == clock.time() - first >= 600
    retries = m[
        (
            "herowatch_notification_send_duration_seconds_count",
            frozenset({"receiver": "console", "kind": "console", "outcome": "retry"}.items()),
        )
    ]
    assert retries >= 1 and m[("herowatch_outbox_backlog", frozenset())] >= 1
    service.stop()


def test_full_collections_are_counted_and_timed_while_the_service_runs(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock)
    service.gc_policy.install()
    try:
        gc.collect()
        m = samples(TestClient(create_app(service), base_url="http://localhost").get("/metrics").text)
        full = frozenset({"generation": "2"}.items())
        assert m[("herowatch_gc_collections_total", full)] >= 1
        assert m[("herowatch_gc_pause_seconds_total", full)] > 0
    finally:
        service.gc_policy.uninstall()
        service.stop()
