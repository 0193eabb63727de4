"""Readiness, Prometheus metrics (herowatch's own registry) and the loaded rules."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import prometheus_client
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from monitor.engine.scheduling import add_interval_job, make_scheduler
from monitor.sources.base import PollResult
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.web.app import create_app
from tests.dashboard.support import build, client
from tests.helpers import tick


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_readyz_needs_the_database_and_recent_polls(db_url, clock):
    service = build(db_url, clock)
    api = client(service)
    fresh = api.get("/readyz")
    if service.engine.leases is None:  # one process (SQLite) owns every watch from the start
        assert fresh.status_code == 503 and fresh.json()["reasons"] == ["source sim: never polled"]
    else:  # a replica (PostgreSQL) answers for the watches whose leases it holds: none yet
        assert fresh.status_code == 200 and fresh.json()["checks"] == {"database": "ok"}
    tick(service, clock, 120)
    ok = api.get("/readyz")
    assert ok.status_code == 200 and ok.json() == {
        "status": "ready",
        "checks": {"database": "ok", "source:sim": "ok"},
        "reasons": [],
    }
    clock.advance(10 * 60)  # nobody polled for 10 minutes of herowatch's clock (3 intervals = 3 minutes)
    late = api.get("/readyz")
    assert late.status_code == 503 and late.json()["status"] == "not ready"
    assert late.json()["reasons"] == ["source sim: last poll 10m ago (limit 3m)"]
    tick(service, clock, 60)
    assert api.get("/readyz").status_code == 200

    # A source outage is an alert, not a reason to take the dashboard out of the load balancer.
    real = service.engine.sources["sim"]
    service.engine.sources["sim"] = type(
        "Down",
        (),
        {"kind": "sim", "close": lambda self: None, "poll": lambda self, *a: PollResult(error="HTTP 500")},
    )()
    tick(service, clock, 60)
    down = api.get("/readyz")
    assert (
        down.status_code == 200 and down.json()["checks"]["source:sim"] == "ok (last poll failed: HTTP 500)"
    )
    service.engine.sources["sim"] = real

    dead = service.api_context()
    dead.sessions = make_sessionmaker(make_engine("postgresql://herowatch:pw@127.0.0.1:1/none"))
    r = TestClient(create_app(dead), base_url="http://localhost").get("/readyz")
    assert r.status_code == 503 and r.json()["checks"]["database"] == "unreachable (OperationalError)"
    assert "127.0.0.1" not in r.text and "pw" not in r.text, "no connection details leave the server"
    service.stop()


def test_metrics_show_herowatch_health_and_per_run_gauges(db_url, clock):
    service = build(db_url, clock)
    tick(service, clock, 30 * 60, every=120)  # hero-a's stall alert fires
    api = client(service)
    r = api.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    m = samples(r.text)

    def get(name, **labels):
        return m[(name, frozenset(labels.items()))]

    assert get("herowatch_source_up", source="sim") == 1.0
    assert get("herowatch_source_last_success_timestamp_seconds", source="sim") == clock.time()
    assert get("herowatch_outbox_backlog") == 0.0, "the tick delivered every notification"
    assert (
        get(
            "herowatch_run_alerts",
            run="sim:hero-a/hero-a",
            watch="hero-a",
            state="firing",
            severity="critical",
        )
        == 1.0
    )
    assert (
        get(
            "herowatch_run_alerts",
            run="sim:hero-b/hero-b",
            watch="hero-b",
            state="firing",
            severity="critical",
        )
        == 0.0
    )
    assert get("herowatch_run_health", run="sim:hero-a/hero-a", watch="hero-a", health="critical") == 1.0
    assert get("herowatch_run_steps_per_second", run="sim:hero-a/hero-a", watch="hero-a") == 0.0
    assert 0.07 < get("herowatch_run_steps_per_second", run="sim:hero-b/hero-b", watch="hero-b") < 0.09
    assert get("herowatch_run_goodput_ratio", run="sim:hero-b/hero-b", watch="hero-b") > 0.95
    assert (
        get("herowatch_run_lost_seconds", run="sim:hero-a/hero-a", watch="hero-a", kind="stalled") > 15 * 60
    )
    assert get("herowatch_run_step", run="sim:hero-b/hero-b", watch="hero-b") > 100
    assert get("herowatch_metrics_read_error") == 0.0
    assert get("herowatch_alerts", rule="progress_stalled", severity="critical", state="firing") == 1.0
    assert (
        get("herowatch_outbox_oldest_age_seconds") == 0.0
        and get("herowatch_outbox_failed_notifications") == 0
    )
    # why messages had nothing to tell, by reason (muted and never announced told apart)
    assert get("herowatch_notifications_dropped_total", reason="muted") == 0
    assert get("herowatch_notifications_dropped_total", reason="never announced") == 0
    assert get("herowatch_source_errors_total", source="sim") == 0.0, "a source's errors count from 0"
    sent = get(
        "herowatch_notification_send_duration_seconds_count",
        receiver="console",
        kind="console",
        outcome="sent",
    )
    assert sent >= 1 and sent == get(
        "herowatch_notification_send_duration_seconds_bucket",
        receiver="console",
        kind="console",
        outcome="sent",
        le="+Inf",
    )
    assert prometheus_client.REGISTRY.get_sample_value("herowatch_outbox_backlog") is None, "own registry"
    service.stop()


def test_poll_cycles_are_counted_from_the_scheduler(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock)
    app = create_app(service, on_start=service.start, on_stop=service.stop)
    # the lifespan starts the service's own scheduler
    with TestClient(app, base_url="http://localhost") as api:
        ctx = app.state.ctx
        deadline = time.monotonic() + 20
        while sum(n for (w, o), n in ctx.polls.counts().items() if o == "ran") < 1:
            service.scheduler.modify_job("poll:hero-b", next_run_time=datetime.now(UTC))
            assert time.monotonic() < deadline, "the scheduler ran no poll"
            time.sleep(0.05)
        m = samples(api.get("/metrics").text)
        assert (
            m[("herowatch_poll_cycles_total", frozenset({"watch": "hero-b", "outcome": "ran"}.items()))] >= 1
        )

    counter = service.api_context().polls  # a scheduler of our own: several cycles, exactly counted
    sched = make_scheduler(1)
    counter.attach(sched)
    counter.attach(sched)  # attaching twice counts once
    add_interval_job(sched, "poll:hero-a", lambda: None, 0.05)
    add_interval_job(sched, "outbox", lambda: None, 0.05)
    sched.start()
    try:
        deadline = time.monotonic() + 20
        while counter.counts().get(("hero-a", "ran"), 0) < 3:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        sched.shutdown(wait=True)
    assert set(counter.counts()) <= {("hero-a", "ran"), ("hero-a", "missed"), ("hero-a", "overlapping")}


def test_rules_are_listed_with_their_parameters(tmp_path, clock):
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock)
    api = client(service)
    rules = {r["name"]: r for r in api.get("/api/rules").json()}
    stall = rules["progress_stalled"]
    assert stall["kind"] == "stall" and stall["severity"] == "critical"
    assert stall["parameters"]["floor"] == "15m" and stall["parameters"]["k"] == 10
    assert stall["annotations"]["runbook_url"] == "/runbooks#progress-stalled", "herowatch serves them"
    assert {r["name"] for r in api.get("/api/rules", params={"watch": "hero-a"}).json()} == set(rules)
    missing = api.get("/api/rules", params={"watch": "nope"})
    assert missing.status_code == 404 and missing.json() == {"error": "no watch named 'nope'"}
    service.stop()
