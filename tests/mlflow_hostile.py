"""A stand-in in front of a real ``mlflow server`` (tests/mlflow_server.py) that passes every request
through except the metric history of one run, which it answers badly: a 500 (``how="500"``), 100 MB of
valid values streamed without a length (``"100 MB"``), or a body that is not JSON (``"not json"``).
Set ``bad`` to a run id (or any text a history request's path holds) to turn it on, None to turn it off.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import httpx

from tests import loopback

HUGE = 100 << 20


class Hostile:
    """Forwards to ``upstream``; a history request naming ``self.bad`` gets ``self.how`` instead."""

    def __init__(self, upstream: str) -> None:
        self.bad: str | None = None
        self.how = "500"
        self.hostile = 0  # hostile answers sent
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if stub.bad and "history" in self.path and stub.bad in self.path:
                    stub.hostile += 1
                    return self._hostile()
                got = httpx.request(
                    self.command,
                    upstream + self.path,
                    content=body,
                    headers={"Content-Type": self.headers.get("Content-Type", "application/json")},
                    timeout=30,
                )
                try:
                    self.send_response(got.status_code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(got.content)))
                    self.end_headers()
                    self.wfile.write(got.content)
                except OSError:  # the client left (herowatch stopped)
                    self.close_connection = True

            def _hostile(self) -> None:
                if stub.how == "500":
                    text = b'{"error_code":"INTERNAL_ERROR","message":"boom"}'
                    status = 500
                elif stub.how == "not json":
                    text, status = b"<html>proxy error</html>", 200
                else:  # 100 MB of valid values, streamed without a length
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    item = b'{"key":"loss","value":1.0,"step":1,"timestamp":1,"run_id":"%s"},'
                    item %= stub.bad.encode()
                    piece = item * (65536 // len(item))
                    try:
                        self.wfile.write(b'{"metrics":[')
                        for _ in range(HUGE // len(piece)):
                            self.wfile.write(piece)
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            do_GET = do_POST = _answer  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.server, self.url = loopback.start(Handler)

    def close(self) -> None:
        loopback.stop(self.server)
