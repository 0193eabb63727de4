"""Prometheus under a running Service watch: the real server SIGKILLed and restarted; queries that error
or return nothing. Never a false stall page; the outage is its own alert, notified once each way."""

from __future__ import annotations

import time
from pathlib import Path

from alerts.clock import ManualClock
from tests.faults.support import (
    assert_exactly_once,
    cycle,
    false_pages,
    notifications,
    rule_states,
    service_for,
)
from tests.prometheus_server import PrometheusServer

# the default aliases this server has no metric for (else the run is rightly watched blind)
NOT_EXPORTED = (
    "oom_kills_total: null, restarts_total: null, xid_errors_total: null, host_memory_available_bytes: null"
)


def config(url: str, queries: str) -> str:
    return f"""
watch:
  - name: infra
    poll_interval: 60s
    prometheus: {{url: '{url}', runs: [r], queries: {queries}, step: 15s, timeout: 1s, retries: 0}}
rules: {{packs: [hero]}}
receivers: [{{name: console, kind: console}}]
route: {{receiver: console, group_wait: 0s}}
"""


def test_server_killed_and_restarted_under_the_watch(tmp_path: Path) -> None:
    with PrometheusServer(tmp_path / "prom") as prom:
        clock = ManualClock(time.time())
        service, out = service_for(
            config(prom.url, "{gpu_sm_active_ratio: 'vector(0.9)', " + NOT_EXPORTED + "}"),
            f"sqlite:///{tmp_path / 'hw.db'}",
            clock,
        )
        try:
            for _ in range(5):
                clock.advance(60)
                (r,) = cycle(service)
                assert not r.errors
            prom.kill()
            for _ in range(20):
                clock.advance(60)
                (r,) = cycle(service)
                assert r.errors.get("prometheus")
            assert rule_states(service, "source_unavailable") == ["firing"]
            # 20 minutes is past the grace (10m): the outage escalates to a critical page, once
            assert rule_states(service, "source_down") == ["firing"]
            prom.start()
            for minute in range(20):
                clock.advance(60)
                (r,) = cycle(service)
                assert not r.errors, r.errors
                if minute == 4:  # answering again, but the outage has not settled: both still fire
                    assert rule_states(service, "source_unavailable") == ["firing"]
                    assert rule_states(service, "source_down") == ["firing"]
            assert rule_states(service, "source_unavailable") == ["resolved"]
            assert rule_states(service, "source_down") == ["resolved"]
            assert false_pages(service) == []
            counts = assert_exactly_once(service, out)
            assert dict(counts) == {
                ("source_unavailable", "infra", "firing"): 1,
                ("source_down", "infra", "firing"): 1,
                ("source_unavailable", "infra", "resolved"): 1,
                ("source_down", "infra", "resolved"): 1,
            }
        finally:
            service.stop()


def test_erroring_and_empty_queries(tmp_path: Path) -> None:
    with PrometheusServer(tmp_path / "prom") as prom:
        clock = ManualClock(time.time())
        empty, _ = service_for(
            config(prom.url, "{gpu_sm_active_ratio: 'absent(vector(1))'}"),
            f"sqlite:///{tmp_path / 'a.db'}",
            clock,
        )
        bad, bad_out = service_for(
            config(prom.url, "{gpu_sm_active_ratio: 'rate(nope[5m]'}"),
            f"sqlite:///{tmp_path / 'b.db'}",
            clock,
        )
        try:
            for _ in range(30):
                clock.advance(60)
                (e,) = cycle(empty)
                assert not e.errors, "a query returning nothing is not an outage"
                (b,) = cycle(bad)
                assert b.errors.get("prometheus"), "a PromQL error is reported"
            assert notifications(empty) == [] and false_pages(empty) == []
            assert rule_states(bad, "source_unavailable") == ["firing"] and false_pages(bad) == []
            # The source never answered, so no run of the watch is known yet: the watch ("infra") itself
            # carries the outage, so that a wrong query, project or key from the start still pages:
            # a warning first, critical (source_down) after the grace.
            assert rule_states(bad, "source_down") == ["firing"]
            assert dict(assert_exactly_once(bad, bad_out)) == {
                ("source_unavailable", "infra", "firing"): 1,
                ("source_down", "infra", "firing"): 1,
            }
        finally:
            empty.stop()
            bad.stop()
