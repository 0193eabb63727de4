"""A tiny HTTP stand-in for the Prometheus API, for what a real server will not do on demand: answers
scripted per request (status, body, how long to hold it), every request recorded, and the most
requests it ever had in flight at once."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs


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
