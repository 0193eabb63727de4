"""The Prometheus source's fleet queries, against a stand-in that answers by query text (for what the
real server will not do on demand: a failing fleet query next to working ones). The real server is
exercised end to end by tests/fleet/test_scenarios.py."""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import pytest
from pydantic import ValidationError

from monitor.settings import Settings
from monitor.sources.base import Target
from monitor.sources.fleet_config import DEFAULT_FLEET
from monitor.sources.prometheus_config import DEFAULT_QUERIES, PrometheusTarget
from monitor.sources.prometheus_source import PrometheusSource

NOW = 1_800_000_000.0  # on the 15 s grid


def matrix(*series: tuple[dict[str, str], list[float]]) -> dict[str, Any]:
    """A range answer: each series' values at NOW - 30, NOW - 15, NOW (None: no point)."""
    result = [
        {
            "metric": labels,
            "values": [[NOW - 30 + 15 * i, str(v)] for i, v in enumerate(vals) if v is not None],
        }
        for labels, vals in series
    ]
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


class Standin:
    """Answers POSTed queries whose text contains a key of ``answers`` (first match)."""

    def __init__(self, answers: dict[str, tuple[int, dict[str, Any]]]) -> None:
        self.answers, self.queries = answers, []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
                query = form.get("query", [""])[0]
                standin.queries.append(query)
                status, body = next((a for k, a in standin.answers.items() if k in query), (200, matrix()))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def source() -> Iterator[PrometheusSource]:
    src = PrometheusSource(Settings())
    yield src
    src.close()


def target(url: str, **cfg: Any) -> Target:
    cfg.setdefault("step", "15s")
    cfg.setdefault("lookback", "45s")
    cfg.setdefault("queries", {**{a: None for a in DEFAULT_QUERIES}, "sm": "avg(DCGM_FI_PROF_SM_ACTIVE)"})
    return Target(watch="w", config=PrometheusTarget(url=url, runs=["r"], **cfg))


def test_each_fleet_metric_is_one_query_and_its_series_become_rows(source, caplog):
    caplog.set_level(logging.INFO, logger="monitor.sources.prometheus_source")
    gpu = {"Hostname": "node-2", "pod": "r-w-2"}
    stub = Standin(
        {
            "avg(DCGM_FI_PROF_SM_ACTIVE)": (200, matrix(({}, [0.9, 0.9, 0.9]))),
            "DCGM_FI_PROF_SM_ACTIVE{": (
                200,
                matrix(
                    ({**gpu, "gpu": "10", "container": "a"}, [0.8, 0.8, 0.8]),
                    ({**gpu, "gpu": "10", "container": "b"}, [0.6, 0.6, 0.6]),  # two series: their mean
                    ({**gpu, "gpu": "2"}, [0.9, None, 0.9]),
                    ({"Hostname": "node-10", "gpu": "0"}, [0.7, 0.7, 0.7]),
                    ({"gpu": "5"}, [0.1, 0.1, 0.1]),  # no host: left out, and said
                ),
            ),
            "node_network_receive_bytes_total": (200, matrix(({"instance": "node-2:9100"}, [1e9, 2e9, 3e9]))),
        }
    )
    try:
        result = source.poll(target(stub.url, fleet={}), {}, NOW)
        assert result.error is None, result.error
        assert len(stub.queries) == 1 + len(DEFAULT_FLEET), "one query per fleet metric, whatever the members"
        frames = {f.metric: f for f in result.validated().fleet}
        assert set(frames) == {"sm_active", "net_rx"}, "metrics without series give no frame"
        sm = frames["sm_active"]
        assert sm.members == (("node-2", "2"), ("node-2", "10"), ("node-10", "0"))
        assert sm.times == (NOW - 30, NOW - 15, NOW) and sm.device_word == "GPU" and sm.unit == "ratio"
        assert sm.values[1] == (pytest.approx(0.7),) * 3
        assert math.isnan(sm.values[0][1])
        rx = frames["net_rx"]
        assert rx.members == (("node-2", None),) and rx.device_word is None and rx.label == "network rx"
        assert "1 series without" in caplog.text
        assert 'node_network_receive_bytes_total{job="r", device!~"lo|' in "\n".join(stub.queries)
    finally:
        stub.close()


def test_a_failing_fleet_query_leaves_a_gap_not_a_failed_poll(source, caplog):
    caplog.set_level(logging.WARNING, logger="monitor.sources.prometheus_source")
    bad = {"status": "error", "errorType": "bad_data", "error": "parse error"}
    stub = Standin(
        {
            "avg(DCGM_FI_PROF_SM_ACTIVE)": (200, matrix(({}, [0.9, 0.9, 0.9]))),
            "DCGM_FI_DEV_GPU_TEMP": (400, bad),
            "DCGM_FI_PROF_SM_ACTIVE{": (200, matrix(({"Hostname": "n", "gpu": "0"}, [0.5, 0.5, 0.5]))),
        }
    )
    try:
        for _ in range(2):
            result = source.poll(target(stub.url, fleet=True), {}, NOW)
            assert result.error is None and {s.metrics["sm"] for s in result.samples} == {0.9}
            assert [f.metric for f in result.fleet] == ["sm_active"]
        warned = [r for r in caplog.records if "gpu_temp" in r.getMessage()]
        assert len(warned) == 1 and "parse error" in warned[0].getMessage(), "said once, not every poll"
    finally:
        stub.close()


def test_fleet_settings_are_checked_where_they_are_read():
    assert PrometheusTarget(url="http://p:9090").fleet is None, "off unless asked for"
    assert PrometheusTarget(url="http://p:9090", fleet=False).fleet is None
    on = PrometheusTarget(url="http://p:9090", fleet=True).fleet
    assert set(on.all_metrics()) == {
        "sm_active", "gpu_temp", "gpu_slowdown", "net_rx", "net_tx", "disk_read", "disk_write",
    }  # fmt: skip
    custom = PrometheusTarget(
        url="http://p:9090",
        fleet={"metrics": {"gpu_temp": None, "power": {"expr": "DCGM_FI_DEV_POWER_USAGE", "label": "power",
                                                        "unit": "watts"}}},
    ).fleet.all_metrics()  # fmt: skip
    assert "gpu_temp" not in custom and custom["power"].host == "Hostname"
    with pytest.raises(ValidationError, match="unknown unit 'furlongs'"):
        PrometheusTarget(
            url="http://p:9090", fleet={"metrics": {"x": {"expr": "x", "label": "x", "unit": "furlongs"}}}
        )
    with pytest.raises(ValidationError, match="fleet metric name"):
        PrometheusTarget(url="http://p:9090", fleet={"metrics": {"a b": {"expr": "x", "label": "x"}}})
    with pytest.raises(ValidationError, match="unknown modifier"):
        PrometheusTarget(url="http://p:9090", fleet={"metrics": {"x": {"expr": "x{{run:up}}", "label": "x"}}})
