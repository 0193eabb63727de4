"""Fixtures of the Prometheus source tests: a live prometheus_client exporter and a real Prometheus
server (history backfilled with promtool, the exporter scraped every second), both for the session; a
source per test; and scripted stand-ins (tests/prometheus_source/stub_server.py), closed after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import prometheus_client
import pytest

from monitor.settings import Settings
from monitor.sources.prometheus_source import PrometheusSource
from tests.prometheus_server import PrometheusServer, backfill, free_port
from tests.prometheus_source.stub_server import Stub
from tests.prometheus_source.support import LIVE, history


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


@pytest.fixture()
def stub_factory() -> Iterator[Callable[..., Stub]]:
    stubs: list[Stub] = []

    def make(script: Callable[[int], tuple[int, dict[str, Any], float]]) -> Stub:
        stubs.append(Stub(script))
        return stubs[-1]

    yield make
    for s in stubs:
        s.close()
