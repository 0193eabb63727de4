"""The Prometheus source against a scripted stand-in, for what a real server will not do on demand:
5xx answers (retried, then an error), hangs (a timeout), the concurrency limit, and the token sent but
never logged."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

from monitor.settings import Settings
from monitor.sources.prometheus_source import PrometheusSource
from tests.prometheus_source.stub_server import OUTAGE, SUCCESS, Stub
from tests.prometheus_source.support import ok, only, series_of, target


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
