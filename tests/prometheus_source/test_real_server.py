"""The Prometheus source against a real Prometheus server: history for three runs backfilled with
promtool (a counter reset, a replaced pod, NaN and infinities, a label value that needs escaping) and a
live prometheus_client exporter scraped every second."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import pytest

from monitor.sources.prometheus_config import DEFAULT_QUERIES
from monitor.sources.prometheus_source import PrometheusSource
from tests.prometheus_server import PrometheusServer, wait_for
from tests.prometheus_source.support import (
    LIVE,
    ODD,
    ODD_JOB,
    A,
    B,
    at,
    ok,
    oom_a,
    pid,
    qid,
    restarts_a,
    roundtrip,
    series_of,
    target,
    xid_a,
)


def test_history_really_has_the_reset_and_the_replaced_pod(prom: PrometheusServer) -> None:
    """The raw sums drop: reading them as they are would make counters go backwards."""
    raw = prom.query(f'sum(container_oom_events_total{{pod=~"{A}-.*"}})', at=at(85))
    assert float(raw[0]["value"][1]) == 0.0  # 0 after the reset + 0, while 3 kills happened
    raw = prom.query(f'sum(kube_pod_container_status_restarts_total{{pod=~"{A}-.*"}})', at=at(55))
    assert float(raw[0]["value"][1]) == 5.0  # worker-1's 2 restarts vanished with its series


def test_warm_up_then_incremental_reads_with_defaults(
    prom: PrometheusServer, source: PrometheusSource
) -> None:
    tgt = target(prom.url, runs=[B], known={A: {"job": "train-a"}})
    first = ok(source.poll(tgt, {}, now=at(70) + 7))
    assert set(first.cursors) == {qid(A), pid(B)}
    # warm-up: the grid of 30 s steps over the last 20 minutes, up to now
    times_a = sorted({s.t for s in first.samples if s.run == qid(A)})
    assert times_a == [at(i) for i in range(31, 71)]
    assert first.cursors[qid(A)]["t"] == at(70)
    for s in first.samples:
        assert s.source == "prometheus" and s.step is None
        assert set(s.metrics) == set(DEFAULT_QUERIES)  # every alias has a value at every timestamp

    second = ok(source.poll(tgt, roundtrip(first.cursors), now=at(100) + 3))
    times2 = sorted(s.t for s in second.samples if s.run == qid(A))
    assert times2 == [at(i) for i in range(71, 101)]  # from the step after the cursor: no overlap, no gap
    both = [s for s in [*first.samples, *second.samples] if s.run == qid(A)]
    assert len({s.t for s in both}) == len(both) == 70  # no duplicates

    a = {**series_of(first, A, "oom_kills_total"), **series_of(second, A, "oom_kills_total")}
    assert a == {at(i): oom_a(i) for i in range(31, 101)}
    values = list(a.values())
    assert all(y >= x for x, y in zip(values, values[1:], strict=False))  # never decreases across the reset
    r = {**series_of(first, A, "restarts_total"), **series_of(second, A, "restarts_total")}
    assert r == {at(i): restarts_a(i) for i in range(31, 101)}
    x = {**series_of(first, A, "xid_errors_total"), **series_of(second, A, "xid_errors_total")}
    assert x == {at(i): xid_a(i) for i in range(31, 101)}
    sm = series_of(second, A, "gpu_sm_active_ratio")
    assert all(v == pytest.approx(0.7) for v in sm.values())
    mem = series_of(second, A, "host_memory_available_bytes")  # via {job} from known_runs
    assert mem == {at(i): pytest.approx(50e9 - i * 1e8) for i in range(71, 101)}

    # run B only sees its own series (an unescaped regex would mix in run A's pods)
    b = [s.metrics for s in second.samples if s.run == pid(B)]
    assert len(b) == 30
    assert all(m["gpu_sm_active_ratio"] == 0.25 for m in b)
    assert all(
        m["oom_kills_total"] == 2 and m["restarts_total"] == 0 and m["xid_errors_total"] == 0 for m in b
    )
    assert all(m["host_memory_available_bytes"] == 7e9 for m in b)  # job defaults to the run id
    assert [ri.run for ri in second.runs] == [pid(B)]  # RunInfo for the runs this config names

    # nothing new yet: no samples, no error, the cursor stays
    third = ok(source.poll(tgt, roundtrip(second.cursors), now=at(100) + 10))
    assert third.samples == [] and third.cursors[qid(A)]["t"] == at(100) and third.requests == 1  # the probe


def test_counter_state_survives_in_the_cursor_across_polls(
    prom: PrometheusServer, source: PrometheusSource
) -> None:
    """Small reads, one after another, give the same counts as one long read."""
    tgt = target(prom.url, known={A: {"job": "train-a"}}, lookback="2m")
    cursors: dict[str, Any] = {}
    seen: dict[float, float] = {}
    for i in range(46, 96, 3):
        result = ok(source.poll(tgt, cursors, now=at(i)))
        seen.update(series_of(result, A, "restarts_total"))
        cursors = roundtrip(result.cursors)
    # the first read starts at 42 (2 minutes back), after worker-1 was replaced at 40: its 2 restarts
    # are still visible through Prometheus' 5-minute lookback, so they are counted.
    assert seen == {at(i): restarts_a(i) for i in range(42, 95)}


def test_instant_mode_reads_one_value_at_now(prom: PrometheusServer, source: PrometheusSource) -> None:
    tgt = target(prom.url, runs=[A], run_labels={A: {"job": "train-a"}}, mode="instant", lookback="5m")
    first = ok(source.poll(tgt, {}, now=at(100)))
    assert sorted(series_of(first, A, "oom_kills_total")) == [at(i) for i in range(90, 101)]  # warm-up range
    now = at(105) + 4.5
    second = ok(source.poll(tgt, roundtrip(first.cursors), now=now))
    assert [s.t for s in second.samples] == [now]
    m = second.samples[0].metrics
    # the warm-up began at 90, after worker-0's reset: the count starts from the raw 1 then present
    assert m["oom_kills_total"] == 2.0 and m["xid_errors_total"] == 2.0
    assert m["host_memory_available_bytes"] == pytest.approx(50e9 - 105 * 1e8)
    assert second.cursors[pid(A)]["t"] == now


def test_label_values_are_escaped(prom: PrometheusServer, source: PrometheusSource) -> None:
    tgt = target(prom.url, known={ODD: {"job": ODD_JOB}}, lookback="1m")
    result = ok(source.poll(tgt, {}, now=at(50)))
    assert {s.t: dict(s.metrics) for s in result.samples} == {
        at(i): {"host_memory_available_bytes": 1234.0} for i in (48, 49, 50)
    }  # and the four aliases with no series for this run are simply absent


def test_empty_query_is_not_an_error(
    prom: PrometheusServer, source: PrometheusSource, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="monitor.sources.prometheus_series")
    queries = {"nothing": 'no_such_metric{job="{job}"}', "weird": 'test_weird{job="{job}"}'}
    tgt = target(prom.url, runs=[B], queries=queries, lookback="1m")
    result = ok(source.poll(tgt, {}, now=at(60)))
    assert [s.t for s in result.samples] == [at(58), at(59), at(60)]
    assert all("nothing" not in s.metrics for s in result.samples)
    assert "no series for nothing" in caplog.text
    # the poll says why, for the watching_blind warning: the metric does not exist at all
    assert "no_such_metric has no series at all" in result.gaps[pid(B)]["nothing"]
    assert "weird" not in result.gaps[pid(B)]
    weird = series_of(result, B, "weird")  # NaN and infinities are kept as floats
    assert weird[at(58)] == math.inf and weird[at(59)] == -math.inf and math.isnan(weird[at(60)])
    # a run with no data at all: no samples, still no error, and the cursor moves on
    lonely = ok(source.poll(target(prom.url, runs=["nobody"], lookback="1m"), {}, now=at(60)))
    assert lonely.samples == [] and lonely.cursors == {pid("nobody"): {"t": at(60)}}
    # its pods are not in Prometheus under its name: the hint names the pods that are
    oom = lonely.gaps[pid("nobody")]["oom_kills_total"]
    assert 'the query container_oom_events_total{pod=~"nobody-.*"} matches no series' in oom
    assert "container_oom_events_total exists for 3 pods (e.g. llama-70b-worker-0" in oom
    assert 'your selector pod=~"nobody-.*" matches none' in oom


def test_promql_error_is_reported_and_not_retried(prom: PrometheusServer, source: PrometheusSource) -> None:
    tgt = target(prom.url, runs=[B], queries={"broken": "sum(rate(x[5m]"}, retries=3)
    result = source.poll(tgt, {}, now=at(60))
    assert result.error is not None and "broken" in result.error and "bad_data" in result.error
    assert result.samples == [] and result.cursors == {}


def test_gauge_with_several_series_is_a_config_error(
    prom: PrometheusServer, source: PrometheusSource
) -> None:
    tgt = target(prom.url, runs=[A], queries={"sm": "DCGM_FI_PROF_SM_ACTIVE{{pod_selector}}"}, lookback="1m")
    result = source.poll(tgt, {}, now=at(60))
    assert result.error is not None and "aggregate" in result.error


def test_live_scraped_value_arrives(
    prom: PrometheusServer, exporter: tuple[int, Any], source: PrometheusSource
) -> None:
    _, gauge = exporter
    tgt = target(prom.url, runs=[LIVE], step="1s", lookback="1m")

    def live_value() -> tuple[float, dict[str, Any]] | None:
        result = ok(source.poll(tgt, {}, now=time.time()))
        values = series_of(result, LIVE, "gpu_sm_active_ratio")
        return (values[max(values)], result.cursors) if values else None

    value, cursors = wait_for(live_value, 30, "the scraped value to become queryable")
    assert value == 0.42
    gauge.labels(pod=f"{LIVE}-worker-0", gpu="0").set(0.9)
    state = {"cursors": cursors, "times": []}

    def changed() -> bool:
        result = ok(source.poll(tgt, state["cursors"], now=time.time()))
        new = series_of(result, LIVE, "gpu_sm_active_ratio")
        assert all(t > state["cursors"][pid(LIVE)]["t"] for t in new)  # incremental: only after the cursor
        state["times"].extend(sorted(new))
        state["cursors"] = result.cursors
        return bool(new) and new[max(new)] == 0.9

    wait_for(changed, 30, "the new live value")
    assert len(state["times"]) == len(set(state["times"]))


def test_server_killed_gives_an_error_then_recovers(tmp_path: Path, source: PrometheusSource) -> None:
    with PrometheusServer(tmp_path / "prom") as server:
        tgt = target(
            server.url, runs=["r"], queries={"one": "vector(1)"}, step="1s", lookback="10s", backoff="0.05s"
        )
        now = time.time()
        first = ok(source.poll(tgt, {}, now=now))
        assert series_of(first, "r", "one")
        idle = ok(source.poll(tgt, first.cursors, now=now))  # nothing due: one probe, no samples
        assert idle.samples == [] and idle.requests == 1 and idle.cursors == first.cursors
        server.kill()
        for later in (now, now + 2):  # nothing due, or something due: the outage is reported either way
            down = source.poll(tgt, first.cursors, now=later)
            assert down.error is not None and "cannot reach" in down.error
            assert down.samples == [] and down.cursors == {} and down.requests >= 1
        server.start()
        back = ok(source.poll(tgt, first.cursors, now=now + 3))
        last = first.cursors[pid("r")]["t"]
        assert sorted(series_of(back, "r", "one")) == [last + 1, last + 2, last + 3]  # right after the cursor
