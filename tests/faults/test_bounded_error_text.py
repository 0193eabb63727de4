"""A source's error text is bounded in one place (``alerts.text.bounded``, issue 37): a Prometheus
stand-in answering 503 with a 50 MB ``error`` string, polled by a real service on SQLite. Before: one
``runs`` row held 52 MB, the database grew 105 MB in 35 s and RSS reached 3.9 GB. Now the stored error,
the readiness answer and the log are bounded, and RSS grows by under 100 MB."""

from __future__ import annotations

import json
import logging
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fastapi.testclient import TestClient
from sqlalchemy import select

from alerts.clock import ManualClock
from alerts.text import MAX_TEXT
from monitor.storage.models import Run
from monitor.web.app import create_app
from tests.helpers import make_service

HUGE = 50 * 1024 * 1024


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kb / 1024


def huge_503(healthy: threading.Event) -> ThreadingHTTPServer:
    """Answers one sample while ``healthy`` is set (so the run is known), then 503 with a 50 MB error."""
    huge = json.dumps({"status": "error", "errorType": "unavailable", "error": "E" * HUGE}).encode()
    fine = json.dumps(
        {
            "status": "success",
            "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1.78e9, "1"]]}]},
        }
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = fine if healthy.is_set() else huge
            self.send_response(200 if healthy.is_set() else 503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def test_a_50_mb_error_from_prometheus_is_stored_and_logged_bounded(tmp_path, caplog):
    healthy = threading.Event()
    healthy.set()
    server = huge_503(healthy)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    config = f"""
watch:
  - name: gpus
    poll_interval: 60s
    prometheus: {{url: "{url}", runs: [hero], queries: {{sm: 'avg(up)'}}, retries: 1, backoff: 0.01s}}
"""
    clock = ManualClock(1_780_000_000.0)
    db = tmp_path / "herowatch.db"
    service, _ = make_service(f"sqlite:///{db}", clock, config)
    service.engine.resume()
    web = TestClient(create_app(service), base_url="http://localhost")
    try:
        clock.advance(60)
        service.engine.poll("gpus")  # the run is known
        healthy.clear()
        clock.advance(60)
        service.engine.poll("gpus")  # warm: the first huge answer
        before = rss_mb()
        with caplog.at_level(logging.INFO):
            for _ in range(6):
                clock.advance(60)
                service.engine.poll("gpus")
                service.engine.check_health()
        grew = rss_mb() - before
        with service.sessions() as s:
            errors = [r.source_error or "" for r in s.scalars(select(Run))]
        assert errors and all(len(e) <= MAX_TEXT for e in errors), [len(e) for e in errors]
        assert any("52,428,8" in e and "bytes" in e for e in errors), errors  # says how large, not what
        ready = web.get("/readyz")
        assert len(ready.text) < 20_000, len(ready.text)
        assert max(len(r.getMessage()) for r in caplog.records) < 20_000
        size = sum(p.stat().st_size for p in tmp_path.glob("herowatch.db*")) / 1e6
        print(f"RSS growth {grew:.1f} MB (limit 100 MB, {grew / 100:.2f}x); database {size:.1f} MB")
        assert grew < 100, f"RSS grew {grew:.0f} MB"
        assert size < 20, f"the database is {size:.1f} MB"
    finally:
        service.stop()
        server.shutdown()
