"""A Prometheus stand-in that answers what a broken or hostile server may: a valid matrix of any size,
made as it is sent (never held in this process), without a ``Content-Length`` (the body ends when the
connection closes), so that only a reader that counts what arrives can stop it."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SERIES_VALUES = 1000  # points per series


def _values(now: float) -> bytes:
    return (
        "[" + ",".join(f'[{now - SERIES_VALUES + k:.3f},"{k % 7}.5"]' for k in range(SERIES_VALUES)) + "]"
    ).encode()


class HostilePrometheus:
    """``size``: bytes of each matrix answer (0: a small valid one). Counts requests and bytes sent."""

    def __init__(self, size: int = 0) -> None:
        self.size = size
        self.requests = 0
        self.sent = 0
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with stub.lock:
                    stub.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()  # HTTP/1.0, no Content-Length: the body ends with the connection
                try:
                    stub._matrix(self.wfile, stub.size)
                except OSError:
                    pass  # the client stopped reading

            def do_GET(self) -> None:  # noqa: N802 - series lookups (hints): nothing known
                body = json.dumps({"status": "success", "data": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _matrix(self, out, size: int) -> None:  # noqa: ANN001 - the handler's wfile
        now = time.time()
        out.write(b'{"status":"success","data":{"resultType":"matrix","result":[')
        sent, i, values = 0, 0, _values(now)
        while True:
            chunk = b'{"metric":{"__name__":"gpu_util","gpu":"%d"},"values":%s}' % (i, values)
            out.write(chunk if i == 0 else b"," + chunk)
            sent += len(chunk) + 1
            i += 1
            if sent >= size:
                break
        out.write(b"]}}")
        with self.lock:
            self.sent += sent

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> HostilePrometheus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
