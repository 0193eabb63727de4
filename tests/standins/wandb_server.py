"""A Weights & Biases stand-in for the real ``wandb`` client: the GraphQL operations it sends, on 127.0.0.1.

The ``wandb`` 0.31 public API sends every call as ``POST {base_url}/graphql`` with
``Authorization: Basic base64("api:" + key)``; this server dispatches on the operation name in the query
text and answers the way the service does (see /work/shared/notes/ecosystem-facts.md):

- ``Viewer``, ``Run``, ``RunState``, ``Runs`` (filters, order, perPage, cursor), ``RunHistoryKeys``,
  ``RunParquetHistory``, ``HistoryPage`` (``maxStep`` exclusive, at most ``pageSize`` rows: a wider range
  is *sampled*, as the service does), ``SampledHistoryPage`` (``maxStep`` inclusive, only rows having every
  key), ``RunSampledHistory`` and ``RunFullHistory`` (``run.history()``, sampled).
- Unknown operations are logged at ERROR, kept in ``unknown_operations`` and answered with a GraphQL error.

Tests drive it from Python: add runs, log rows, rewind, change state or tags, delete runs, inject faults
(HTTP status such as 500 or 429 with Retry-After, slow answers, dropped connections), or enforce a quota
(``enforce_quota``: at most N requests of a key in any window, 429 with ``Retry-After``,
``RateLimit-Remaining`` (0-1000) and ``RateLimit-Reset`` beyond it, as W&B documents). Every request is
recorded (operation, variables, status, bytes) so tests can assert request counts and step ranges. Time
is the server's own clock (``clock``), moved by the tests: nothing here waits for time to pass except an
injected slow answer.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import re
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.standins.wandb_data import FakeRun, WandbData

__all__ = ["FakeRun", "Fault", "Recorded", "WandbStandin"]

log = logging.getLogger("standin.wandb")
_OPERATION = re.compile(r"\b(?:query|mutation)\s+([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class Recorded:
    operation: str
    variables: dict[str, Any]
    status: int
    bytes_in: int
    bytes_out: int


@dataclass
class Fault:
    """What to do to the next ``times`` matching requests (``times=-1``: until cleared)."""

    status: int = 0  # 0: answer normally (after ``delay``)
    delay: float = 0.0
    retry_after: float | None = None
    drop: bool = False  # close the connection without an answer
    operations: frozenset[str] | None = None
    times: int = 1


class WandbStandin(WandbData):
    """The server, its state (``WandbData``: runs, history, answers), faults and the request record.
    Use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(
        self,
        api_key: str,
        entity: str = "hero-team",
        clock: float = 1_767_225_600.0,
        step_seconds: float = 10.0,
    ) -> None:
        super().__init__(entity, clock, step_seconds)
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self._stopping = threading.Event()
        self._auth = "Basic " + base64.b64encode(f"api:{api_key}".encode()).decode()
        self._server: _Server | None = None
        self._port = 0
        self.quota: tuple[int, float] | None = None  # (requests, window seconds) per API key
        self.quota_clock: Callable[[], float] = lambda: self.clock  # the server's clock, moved by tests
        self._accepted: dict[str, deque[float]] = {}  # per key: when each request of the window came

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(self) -> WandbStandin:
        """Listen on an ephemeral port, or on the same port again after ``stop()`` (a server restart)."""
        self._stopping.clear()
        handler = type("Handler", (_Handler,), {"standin": self})
        self._server = _Server(("127.0.0.1", self._port), handler)
        self._port = self._server.server_address[1]
        threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="wandb-standin", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        """Go down: stop listening and cut the client's open keep-alive connections."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.close_connections()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> WandbStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._port, "not started"
        return f"http://127.0.0.1:{self._port}"

    # ---- faults and the request record -----------------------------------------------------------
    def inject(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def fail(
        self,
        status: int = 500,
        times: int = 1,
        operations: Iterable[str] | None = None,
        retry_after: float | None = None,
    ) -> Fault:
        ops = frozenset(operations) if operations is not None else None
        return self.inject(Fault(status=status, times=times, operations=ops, retry_after=retry_after))

    def slow(self, delay: float, times: int = 1, operations: Iterable[str] | None = None) -> Fault:
        ops = frozenset(operations) if operations is not None else None
        return self.inject(Fault(delay=delay, times=times, operations=ops))

    def enforce_quota(self, requests: int, window: float = 60.0) -> None:
        """At most ``requests`` requests of an API key in any ``window`` seconds (of ``quota_clock``);
        the ones beyond are answered 429 and do not count."""
        with self._lock:
            self.quota = (requests, window)
            self._accepted.clear()

    def over_quota(self) -> int:
        """Requests answered 429 by the quota."""
        return self.count_status(429)

    def count_status(self, status: int) -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.status == status)

    def _admit(self, key: str) -> dict[str, str] | None:
        """None: within the quota (counted); else the 429's headers."""
        if self.quota is None:
            return None
        limit, window = self.quota
        with self._lock:
            now = self.quota_clock()
            sent = self._accepted.setdefault(key, deque())
            while sent and sent[0] <= now - window:
                sent.popleft()
            if len(sent) < limit:
                sent.append(now)
                return None
            reset = max(1, math.ceil(sent[0] + window - now))
        return {"Retry-After": str(reset), "RateLimit-Remaining": "0", "RateLimit-Reset": str(reset)}

    def clear_faults(self) -> None:
        with self._lock:
            self.faults.clear()

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def count(self, *operations: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if not operations or r.operation in operations)

    def history_ranges(self, run_id: str | None = None) -> list[tuple[str, int, int]]:
        """(run, minStep, maxStep) of each HistoryPage request, in order."""
        with self._lock:
            return [
                (r.variables["run"], r.variables["minStep"], r.variables["maxStep"])
                for r in self.requests
                if r.operation == "HistoryPage" and (run_id is None or r.variables.get("run") == run_id)
            ]

    def _take_fault(self, operation: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times != 0 and (fault.operations is None or operation in fault.operations):
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.open: set[socket.socket] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        for sock in list(self.open):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("wandb stand-in: connection error from %s (client gave up?)", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    standin: WandbStandin
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - never the headers
        log.debug("wandb stand-in: " + format, *args)

    def _send(self, status: int, body: dict[str, Any], headers: Mapping[str, str] = {}) -> int:  # noqa: B006
        data = json.dumps(body).encode()
        self._record(status, len(data))  # before the answer leaves: a client that has it sees it recorded
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, x in headers.items():
            self.send_header(k, x)
        self.end_headers()
        self.wfile.write(data)
        return len(data)

    def _record(self, status: int, out: int) -> None:
        pending, self._pending = getattr(self, "_pending", None), None
        if pending is not None:
            with self.standin._lock:
                operation, variables, bytes_in = pending
                self.standin.requests.append(Recorded(operation, variables, status, bytes_in, out))

    def do_GET(self) -> None:  # noqa: N802
        self._send(404, {"errors": [{"message": "the stand-in only serves POST /graphql"}]})

    def do_POST(self) -> None:  # noqa: N802
        s = self.standin
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = {}
        query = payload.get("query") or ""
        m = _OPERATION.search(query)
        operation = payload.get("operationName") or (m.group(1) if m else "<anonymous>")
        variables = payload.get("variables") or {}
        self._pending = (operation, variables, len(raw))
        try:
            if self.path.split("?")[0].rstrip("/") != "/graphql":
                self._send(404, {"errors": [{"message": f"no route {self.path}"}]})
                log.error("wandb stand-in: request to unknown path %s", self.path)
                return
            if self.headers.get("Authorization") != s._auth:
                self._send(401, {"errors": [{"message": "user is not logged in"}]})
                return
            limited = s._admit(s._auth)
            if limited is not None:
                self._send(429, {"errors": [{"message": "rate limit exceeded"}]}, limited)
                return
            fault = s._take_fault(operation)
            if fault is not None:
                if fault.delay:
                    s._stopping.wait(fault.delay)
                if fault.drop:
                    self._record(-1, 0)
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault.status:
                    headers = (
                        {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
                    )
                    self._send(
                        fault.status, {"errors": [{"message": f"injected HTTP {fault.status}"}]}, headers
                    )
                    return
            try:
                body = s.answer(operation, query, variables)
            except Exception as exc:  # a stand-in bug or an unsupported filter: say so loudly
                log.exception("wandb stand-in: %s failed", operation)
                body = {"data": None, "errors": [{"message": f"stand-in error: {exc}"}]}
            self._send(200, body)
        finally:
            self._record(-1, 0)  # only if nothing was answered (the handler failed)
