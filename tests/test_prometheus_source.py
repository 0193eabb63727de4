"""The Prometheus source against a real Prometheus server (and a small stand-in for 5xx and hangs).

History for three runs is backfilled with promtool; a live prometheus_client exporter is scraped
every second. The runs ``llama-70b`` and ``llama.70b`` are chosen so that an unescaped regex
(``pod=~"llama.70b-.*"``) would also match the other run's pods.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import prometheus_client
import pytest
from pydantic import ValidationError

try:
    from tests.prometheus_server import PrometheusServer, backfill, free_port, openmetrics, wait_for
except ImportError:  # tests/ is not a package: pytest puts it on sys.path
    from prometheus_server import PrometheusServer, backfill, free_port, openmetrics, wait_for

from monitor.config.schema import Watch
from monitor.settings import Settings
from monitor.sources.base import PollResult, Target
from monitor.sources.prometheus_config import (
    DEFAULT_QUERIES,
    PrometheusTarget,
    TemplateError,
    promql_regex,
    promql_string,
    render,
)
from monitor.sources.prometheus_source import PrometheusSource, accumulate
from monitor.sources.registry import make_source

A, B, ODD, LIVE = "llama-70b", "llama.70b", "odd-run", "live-run"
ODD_JOB = 'odd "q" \\ x'
STEP = 30.0
T0 = (int(time.time()) // 3600 - 4) * 3600  # history: 120 points, 30 s apart, starting 4 h ago
N = 120


def at(i: int) -> float:
    return T0 + STEP * i


def pts(fn: Callable[[int], float | None]) -> list[tuple[float, float]]:
    return [(at(i), v) for i in range(N) if (v := fn(i)) is not None]


def history() -> str:
    w0, w1, w1x, b0 = f"{A}-worker-0", f"{A}-worker-1", f"{A}-worker-1x", f"{B}-worker-0"
    weird = [math.nan, math.inf, -math.inf]
    return openmetrics(
        [
            (
                "container_oom_events",
                "counter",
                [
                    # 0, 1, 3 kills, then at i=80 the counter resets to 0 (same labels), then 1 at i=90.
                    (
                        {"pod": w0, "container": "trainer"},
                        pts(lambda i: 0 if i < 20 else 1 if i < 40 else 3 if i < 80 else 0 if i < 90 else 1),
                    ),
                    ({"pod": w1, "container": "trainer"}, pts(lambda i: 0 if i < 95 else 1)),
                    ({"pod": b0, "container": "trainer"}, pts(lambda i: 2)),
                ],
            ),
            (
                "kube_pod_container_status_restarts",
                "counter",
                [
                    ({"pod": w0, "container": "trainer"}, pts(lambda i: 5 if i < 60 else 6)),
                    # worker-1 is replaced at i=40 by worker-1x: the old series ends, a new one starts at 0.
                    ({"pod": w1, "container": "trainer"}, pts(lambda i: 2 if i < 40 else None)),
                    ({"pod": w1x, "container": "trainer"}, pts(lambda i: 0 if i >= 40 else None)),
                    ({"pod": b0, "container": "trainer"}, pts(lambda i: 0)),
                ],
            ),
            (
                "DCGM_FI_PROF_SM_ACTIVE",
                "gauge",
                [
                    ({"pod": w0, "gpu": "0"}, pts(lambda i: 0.8)),
                    ({"pod": w0, "gpu": "1"}, pts(lambda i: 0.6)),
                    ({"pod": b0, "gpu": "0"}, pts(lambda i: 0.25)),
                ],
            ),
            (
                "DCGM_FI_DEV_XID_ERRORS",
                "gauge",
                [
                    ({"pod": w0, "gpu": "0"}, pts(lambda i: 0 if i < 30 else 79 if i < 100 else 48)),
                    ({"pod": w0, "gpu": "1"}, pts(lambda i: 0)),
                    ({"pod": b0, "gpu": "0"}, pts(lambda i: 0)),
                ],
            ),
            (
                "node_memory_MemAvailable_bytes",
                "gauge",
                [
                    ({"job": "train-a", "instance": "n1"}, pts(lambda i: 100e9)),
                    ({"job": "train-a", "instance": "n2"}, pts(lambda i: 50e9 - i * 1e8)),
                    ({"job": B, "instance": "n3"}, pts(lambda i: 7e9)),
                    ({"job": ODD_JOB, "instance": "n9"}, pts(lambda i: 1234.0)),
                ],
            ),
            ("test_weird", "gauge", [({"job": B}, pts(lambda i: weird[i % 3]))]),
        ]
    )


# What the aliases of run A must read at history point i.
def oom_a(i: int) -> float:
    w0 = 0 if i < 20 else 1 if i < 40 else 3 if i < 90 else 4  # the reset at 80 (to 0) adds nothing
    return w0 + (1 if i >= 95 else 0)


def restarts_a(i: int) -> float:
    return 7.0 if i < 60 else 8.0  # 5 + 2 (worker-1, gone at 40, still counts) + 0, then worker-0's 6th


def xid_a(i: int) -> float:
    return 0.0 if i < 30 else 1.0 if i < 100 else 2.0


# ---- servers -------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def exporter() -> Iterator[tuple[int, prometheus_client.Gauge]]:
    registry = prometheus_client.CollectorRegistry()
    gauge = prometheus_client.Gauge(
        "DCGM_FI_PROF_SM_ACTIVE", "SM active ratio", ["pod", "gpu"], registry=registry
    )
    gauge.labels(pod=f"{LIVE}-worker-0", gpu="0").set(0.42)
    port = free_port()
    server, thread = prometheus_client.start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        yield port, gauge
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def prom(tmp_path_factory: pytest.TempPathFactory, exporter: tuple[int, Any]) -> Iterator[PrometheusServer]:
    workdir = tmp_path_factory.mktemp("prometheus")
    backfill(history(), workdir / "data")
    scrape = [
        {
            "job_name": "live",
            "scrape_interval": "1s",
            "static_configs": [{"targets": [f"127.0.0.1:{exporter[0]}"]}],
        }
    ]
    with PrometheusServer(workdir, scrape) as server:
        yield server


@pytest.fixture()
def source() -> Iterator[PrometheusSource]:
    src = PrometheusSource(Settings())
    yield src
    src.close()


def qid(name: str) -> str:
    """The id of a run another source (W&B) of the watch found: ``name`` is its id there."""
    return f"wandb:team/llm/{name}"


def pid(name: str) -> str:
    """The id of a run the Prometheus config itself names (``runs``)."""
    return f"prometheus:w/{name}"


def target(url: str, known: dict[str, dict[str, str]] | None = None, **cfg: Any) -> Target:
    """``known``: runs found by another source, by their name there (the templates get the name, never
    herowatch's source-qualified id)."""
    cfg.setdefault("step", "30s")
    cfg.setdefault("lookback", "20m")
    known = known or {}
    return Target(
        watch="w",
        config=PrometheusTarget(url=url, **cfg),
        known_runs={qid(k): v for k, v in known.items()},
        names={qid(k): k for k in known},
    )


def ok(result: PollResult) -> PollResult:
    assert result.error is None, result.error
    return result


def series_of(result: PollResult, run: str, alias: str) -> dict[float, float]:
    """The values of the run named ``run`` (known, or named by the config)."""
    ids = (qid(run), pid(run))
    return {s.t: s.metrics[alias] for s in result.samples if s.run in ids and alias in s.metrics}


def roundtrip(cursors: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(cursors, allow_nan=False))  # cursors are stored as JSON


# ---- against the real server ---------------------------------------------------------------------
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


# ---- against a stand-in, for what a real server will not do on demand ---------------------------
class Stub:
    """A tiny HTTP server answering Prometheus API calls from a script: status, body, hold (seconds)."""

    def __init__(self, script: Callable[[int], tuple[int, dict[str, Any], float]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0
        self.release = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                with stub.lock:
                    n = len(stub.requests)
                    stub.requests.append(
                        {"path": self.path, "form": parse_qs(body), "headers": dict(self.headers)}
                    )
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                status, answer, hold = stub.script(n)
                stub.release.wait(hold)  # simulated latency, or a hang until the test ends
                with stub.lock:
                    stub.in_flight -= 1
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


SUCCESS = {
    "status": "success",
    "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[60, "1"]]}]},
}
OUTAGE = {"status": "error", "errorType": "internal", "error": "storage unavailable"}


@pytest.fixture()
def stub_factory() -> Iterator[Callable[..., Stub]]:
    stubs: list[Stub] = []

    def make(script: Callable[[int], tuple[int, dict[str, Any], float]]) -> Stub:
        stubs.append(Stub(script))
        return stubs[-1]

    yield make
    for s in stubs:
        s.close()


def only(**queries: str) -> dict[str, str | None]:
    return {**{alias: None for alias in DEFAULT_QUERIES}, **queries}


def test_5xx_is_retried_then_succeeds(stub_factory: Callable[..., Stub], source: PrometheusSource) -> None:
    stub = stub_factory(lambda n: (503, OUTAGE, 0) if n < 2 else (200, SUCCESS, 0))
    tgt = target(
        stub.url, runs=["r"], queries=only(one="vector(1)"), retries=2, backoff="0.01s", lookback="1m"
    )
    result = ok(source.poll(tgt, {}, now=61.0))
    assert result.requests == 3 and series_of(result, "r", "one") == {60.0: 1.0}
    form = stub.requests[0]["form"]
    assert stub.requests[0]["path"] == "/api/v1/query_range"
    assert form["start"] == ["30.000"] and form["end"] == ["60.000"] and form["step"] == ["30"]


def test_5xx_every_time_gives_an_error(stub_factory: Callable[..., Stub], source: PrometheusSource) -> None:
    stub = stub_factory(lambda n: (500, OUTAGE, 0))
    tgt = target(
        stub.url, runs=["r"], queries=only(one="vector(1)"), retries=2, backoff="0.01s", lookback="1m"
    )
    result = source.poll(tgt, {}, now=61.0)
    assert result.error is not None and "HTTP 500" in result.error and "storage unavailable" in result.error
    assert result.requests == 3 and len(stub.requests) == 3 and result.samples == []


def test_timeout_gives_an_error(stub_factory: Callable[..., Stub], source: PrometheusSource) -> None:
    stub = stub_factory(lambda n: (200, SUCCESS, 30))  # holds every answer until the test ends
    tgt = target(
        stub.url,
        runs=["r"],
        queries=only(one="vector(1)"),
        timeout="0.3s",
        retries=1,
        backoff="0.01s",
        lookback="1m",
    )
    started = time.monotonic()
    result = source.poll(tgt, {}, now=61.0)
    assert result.error is not None and "no answer within 0.3s" in result.error
    assert result.requests == 2 and time.monotonic() - started < 5


def test_concurrency_is_limited(stub_factory: Callable[..., Stub], source: PrometheusSource) -> None:
    stub = stub_factory(lambda n: (200, SUCCESS, 0.05))
    queries = only(**{f"q{i}": "vector(1)" for i in range(12)})
    tgt = target(stub.url, runs=["r"], queries=queries, max_concurrency=3, lookback="1m")
    result = ok(source.poll(tgt, {}, now=61.0))
    assert result.requests == 12 and len(result.samples) == 1 and len(result.samples[0].metrics) == 12
    assert 1 <= stub.max_in_flight <= 3


def test_token_from_env_is_sent_and_never_logged(
    stub_factory: Callable[..., Stub], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "s3cr3t-token-value-0123456789"
    monkeypatch.setenv("HEROWATCH_PROMETHEUS_TOKEN", secret)
    caplog.set_level(logging.DEBUG)
    stub = stub_factory(lambda n: (500, OUTAGE, 0) if n == 0 else (200, SUCCESS, 0))
    src = PrometheusSource(Settings())
    try:
        tgt = target(
            stub.url,
            runs=["r"],
            queries=only(one="vector(1)"),
            retries=0,
            headers={"X-Scope-OrgID": "t1"},
            lookback="1m",
        )
        failed = src.poll(tgt, {}, now=61.0)
        ok(src.poll(tgt, {}, now=61.0))
    finally:
        src.close()
    assert failed.error is not None and secret not in failed.error
    headers = {k.lower(): v for k, v in stub.requests[-1]["headers"].items()}
    assert headers["authorization"] == f"Bearer {secret}" and headers["x-scope-orgid"] == "t1"
    assert secret not in caplog.text


# ---- config and pure parts -----------------------------------------------------------------------
def test_config_validation() -> None:
    base = {"url": "http://prometheus:9090"}
    for bad in (
        {"url": "http://user:pw@prometheus:9090"},
        {"headers": {"Authorization": "Bearer x"}},
        {"queries": {"x": 'up{job="{run:bogus}"}'}},
        {"step": "1s", "lookback": "1d"},  # more than 11,000 points
        {"unknown": 1},
    ):
        with pytest.raises(ValidationError):
            PrometheusTarget(**{**base, **bad})
    cfg = PrometheusTarget(
        **base,
        queries={"oom_kills_total": "sum(my_ooms_total)", "restarts_total": None, "extra": "up"},
        timeout="2s",
    )
    queries = cfg.all_queries()
    assert (
        queries["oom_kills_total"].kind == "counter"
        and queries["oom_kills_total"].expr == "sum(my_ooms_total)"
    )
    assert "restarts_total" not in queries and queries["extra"].kind == "gauge"
    assert cfg.timeout == 2.0 and cfg.url == "http://prometheus:9090"
    watch = Watch(name="hero", prometheus={"url": "http://prometheus:9090/", "runs": ["r1"]})
    assert watch.targets()["prometheus"].runs == ["r1"]
    assert isinstance(make_source("prometheus", Settings()), PrometheusSource)


def test_templates() -> None:
    assert promql_string('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    assert promql_regex("llama.70b") == "llama\\\\.70b"  # \. inside a PromQL string
    values = {"run": "r.1", "job": 'j"'}
    fragments = {"sel": render('pod=~"{run:re}-.*"', values)}
    assert render('sum(x{{sel}, job="{job}"})', values, fragments) == 'sum(x{pod=~"r\\\\.1-.*", job="j\\""})'
    with pytest.raises(TemplateError):
        render('x{a="{missing}"}', values)


def test_accumulate_counter_and_events() -> None:
    series = [({"pod": "a"}, [(1, 3), (2, 0), (3, 2)]), ({"pod": "b"}, [(1, 1), (2, 1)])]
    out, state = accumulate("counter", None, series, None, now=3, forget_after=3600)
    assert out == [(1, 4), (2, 4), (3, 6)]  # the reset of a (3 -> 0) adds nothing; then 2 new
    more, _ = accumulate(
        "counter", state, [({"pod": "a"}, [(4, 1)]), ({"pod": "b"}, [(4, math.nan)])], 3, 4, 3600
    )
    assert more == [(4, 7)]
    events, _ = accumulate(
        "events", None, [({"gpu": "0"}, [(1, 0), (2, 79), (3, 79), (4, 48)])], None, 4, 3600
    )
    assert events == [(1, 0), (2, 1), (3, 1), (4, 2)]
    _, pruned = accumulate("counter", state, [], 3, now=10_000, forget_after=3600)
    assert pruned["series"] == {} and pruned["total"] == 6
