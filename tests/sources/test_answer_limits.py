"""Every answer a source reads over HTTP is read against its byte limit (``max_answer_bytes``): a 100 MB
MLflow ``runs/search`` page or Prometheus matrix is an outage naming the limit, never read whole (issue
37: the MLflow answer added 360 MB to herowatch). Answers within the limit are read as before."""

from __future__ import annotations

import json
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler

import pytest

from monitor.sources.base import Target
from monitor.sources.mlflow_config import MlflowTarget
from monitor.sources.mlflow_source import MlflowSource
from monitor.sources.prometheus_config import PrometheusTarget
from monitor.sources.prometheus_source import PrometheusSource
from tests import loopback

HUGE = 100 << 20


class Hostile:
    """Answers every request with ``body(path)``: bytes, sent in 64 KiB pieces, without a
    ``Content-Length`` unless ``declare``."""

    def __init__(self, body, declare: bool = False) -> None:  # noqa: ANN001 - path -> iterable of bytes
        self.sent = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                sent = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                pieces, size = body(f"{self.path}?{sent}")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if declare:
                    self.send_header("Content-Length", str(size))
                self.end_headers()
                try:
                    for piece in pieces:
                        self.wfile.write(piece)
                        stub.sent += len(piece)
                except OSError:
                    pass

            do_GET = do_POST = _answer  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.server, self.url = loopback.start(Handler)

    def close(self) -> None:
        loopback.stop(self.server)


def json_pieces(head: bytes, item: bytes, tail: bytes, size: int):
    """A valid JSON document of about ``size`` bytes: ``head``, ``item`` repeated, ``tail``."""
    n = max(1, size // (len(item) + 1))

    group = max(1, (64 << 10) // len(item))  # pieces of about 64 KiB: the server holds little

    def gen():
        yield head
        piece = b",".join([item] * group)
        for i in range(0, n, group):
            yield (b"," if i else b"") + (piece if i + group <= n else b",".join([item] * (n - i)))
        yield tail

    return gen(), len(head) + len(tail) + n * (len(item) + 1) - 1


def mlflow_answer(path: str):
    if "experiments/get-by-name" in path:
        body = json.dumps({"experiment": {"experiment_id": "1", "name": "e"}}).encode()
        return [body], len(body)
    run = json.dumps(
        {
            "info": {"run_id": "a" * 32, "run_name": "r", "status": "RUNNING", "start_time": 1},
            "data": {"metrics": [{"key": "train/loss", "value": 1.0, "step": 1, "timestamp": 1}]},
        }
    ).encode()
    return json_pieces(b'{"runs":[', run, b"]}", HUGE)


@pytest.mark.parametrize("declare", [False, True], ids=["streamed", "declared"])
def test_a_100_mb_mlflow_search_page_is_an_outage_naming_the_limit_not_read_whole(declare):
    srv = Hostile(mlflow_answer, declare=declare)
    try:
        cfg = MlflowTarget(tracking_uri=srv.url, experiment="e", retries=0, timeout=10)
        tracemalloc.start()
        res = MlflowSource().poll(Target("w", cfg), {}, time.time())
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        srv.close()
    assert res.error is not None and f"over the limit of {32 << 20} bytes" in res.error, res.error
    assert "max_answer_bytes" in res.error
    assert peak < 48 << 20, f"{peak >> 20} MB held while reading"
    assert srv.sent < HUGE // 2, "herowatch stopped reading at the limit"


def test_an_mlflow_answer_within_the_limit_is_read():
    def small(path: str):
        if "experiments/get-by-name" in path:
            return mlflow_answer(path)
        body = json.dumps({"runs": []}).encode()
        return [body], len(body)

    srv = Hostile(small)
    try:
        cfg = MlflowTarget(tracking_uri=srv.url, experiment="e", retries=0, timeout=10)
        res = MlflowSource().poll(Target("w", cfg), {}, time.time())
    finally:
        srv.close()
    assert res.error is None, res.error


def prometheus_answer(request: str):
    """A 100 MB matrix for run ``big``'s queries; a small valid one for the others."""
    now = time.time()
    series = b'{"metric":{},"values":[' + b",".join(b'[%.3f,"1"]' % (now - 10 + i) for i in range(10)) + b"]}"
    head, tail = b'{"status":"success","data":{"resultType":"matrix","result":[', b"]}}"
    if "big" not in request:
        return [head + series + tail], len(head + series + tail)
    return json_pieces(head, series, tail, HUGE)


@pytest.mark.parametrize("declare", [False, True], ids=["streamed", "declared"])
def test_a_100_mb_prometheus_matrix_makes_its_run_unreadable_naming_a_limit_set_per_watch(declare):
    srv = Hostile(prometheus_answer, declare=declare)
    try:
        cfg = PrometheusTarget(
            url=srv.url,
            runs=["big", "small"],
            queries={"q": 'up{job="{run}"}'},
            retries=0,
            timeout=10,
            step=1,
            max_answer_bytes=1 << 20,
        )
        tracemalloc.start()
        res = PrometheusSource().poll(Target("w", cfg), {}, time.time()).validated()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        srv.close()
    assert res.error is None, res.error
    big, small = "prometheus:w/big", "prometheus:w/small"
    assert list(res.unreadable) == [big], res.unreadable
    assert (
        f"over the limit of {1 << 20} bytes" in res.unreadable[big]
        and "max_answer_bytes" in res.unreadable[big]
    )
    assert {s.run for s in res.samples} == {small}, "the other run is read"
    assert peak < 16 << 20, f"{peak >> 20} MB held while reading"
