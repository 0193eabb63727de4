"""The Slack stand-in's Socket Mode: the websocket side of a Slack app that has Socket Mode on.

As Slack does (https://api.slack.com/apis/connections/socket-implement):

- ``apps.connections.open`` (with the app-level token, ``xapp-...``; a bot token answers
  ``not_allowed_token_type``) returns a ``ws://`` URL on loopback with a one-time ticket; connecting
  with a used or unknown ticket is refused (HTTP 403 on the handshake);
- on connecting, the app is sent ``{"type": "hello", "num_connections": n, ...}``;
- envelopes ``{"envelope_id", "type", "payload", "accepts_response_payload", "retry_attempt",
  "retry_reason"}`` go to one of the app's open connections (any of them: tests may say which); the
  app acknowledges with ``{"envelope_id": ..., "payload": ...}``;
- an envelope not acknowledged within ``ack_timeout`` (3 s) is delivered again, with the same id and
  ``retry_attempt`` + 1, to an open connection, at most ``max_retries`` times;
- ``disconnect`` (``{"type": "disconnect", "reason": "refresh_requested"}``) asks the app to open a
  new connection; the old one is closed a little later, as Slack does;
- faults: a connection dropped without a closing handshake (``drop``), an acknowledgement lost on
  the way, its connection dropped with it (``lose_ack``), as when a network path breaks mid-stream,
  and a path that goes silent without closing (``with_relay`` then ``relay.silence_all``).

Everything received is recorded: connections (with their hello), deliveries and acknowledgements.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

APP_ID = "A0HEROWATCH"


@dataclass
class Ack:
    connection: int
    payload: dict[str, Any] | None
    at: float  # time.monotonic()


@dataclass
class Envelope:
    envelope_id: str
    type: str  # slash_commands, interactive, events_api
    payload: dict[str, Any]
    accepts_response_payload: bool
    deliveries: list[int] = field(default_factory=list)  # the connections it was sent to, in order
    acks: list[Ack] = field(default_factory=list)
    last_sent: float = 0.0  # time.monotonic() of the last delivery

    @property
    def acked(self) -> bool:
        return bool(self.acks)

    def frame(self) -> str:
        return json.dumps(
            {
                "envelope_id": self.envelope_id,
                "type": self.type,
                "payload": self.payload,
                "accepts_response_payload": self.accepts_response_payload,
                "retry_attempt": len(self.deliveries) - 1,
                "retry_reason": "timeout" if len(self.deliveries) > 1 else "",
            }
        )


@dataclass
class Connection:
    number: int
    ws: ServerConnection
    opened_at: float
    closed_at: float | None = None
    how: str = ""  # how it ended: "client", "dropped", "refreshed"

    @property
    def open(self) -> bool:
        return self.closed_at is None


class Relay:
    """The network path between the app and Slack, as a TCP relay on loopback: it can go silent, as a NAT
    or a firewall that forgot the connection does, dropping what either side sends without closing
    anything (no error reaches either end: only unanswered pings tell)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.silent: set[int] = set()  # numbers of the paths that went silent
        self._count = itertools.count(1)
        threading.Thread(target=self._accept, name="slack-socket-relay", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                app, _ = self.listener.accept()
            except OSError:
                return  # closed
            slack = socket.create_connection(("127.0.0.1", self.target_port))
            path = next(self._count)
            for src, dst in ((app, slack), (slack, app)):
                threading.Thread(target=self._pump, args=(path, src, dst), daemon=True).start()

    def _pump(self, path: int, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if path not in self.silent:
                    dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def silence_all(self) -> None:
        """Every path open now goes silent (new ones work)."""
        self.silent.update(range(1, next(self._count)))

    def close(self) -> None:
        self.listener.close()


class SocketModeServer:
    """Started and stopped with the ``SlackStandin``; tests drive it through ``standin.socket``."""

    def __init__(self, ack_timeout: float = 3.0, max_retries: int = 3) -> None:
        self.ack_timeout, self.max_retries = ack_timeout, max_retries
        self.connections: list[Connection] = []
        self.envelopes: dict[str, Envelope] = {}
        self.urls_issued = 0
        self._tickets: set[str] = set()
        self._lost_acks: set[str] = set()
        self._ids = itertools.count(1)
        self._rotation = itertools.count()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._server: Server | None = None
        self._port = 0  # kept after stop: URLs still point here, where nothing answers (a blocked path)
        self.relay: Relay | None = None  # with_relay(): URLs lead through it

    # ---- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._stop.clear()
        self._server = serve(
            self._serve, "127.0.0.1", 0, process_request=self._check_ticket, ping_interval=None
        )
        self._port = self._server.socket.getsockname()[1]
        threading.Thread(target=self._server.serve_forever, name="slack-socket-standin", daemon=True).start()
        threading.Thread(target=self._redeliver, name="slack-socket-redeliver", daemon=True).start()

    def with_relay(self) -> Relay:
        """From now on the URLs handed out lead through a :class:`Relay` (which can go silent)."""
        self.relay = Relay(self.port)
        return self.relay

    def stop(self) -> None:
        self._stop.set()
        if self.relay is not None:
            self.relay.close()
        for c in self.open_connections():
            c.ws.close_socket()
        if self._server is not None:
            self._server.shutdown()
            self._server = None

    @property
    def port(self) -> int:
        assert self._port, "not started"
        return self._port

    def issue_url(self) -> str:
        """What ``apps.connections.open`` answers: a URL with a ticket good for one connection."""
        ticket = f"T{next(self._ids):06d}"
        with self._lock:
            self._tickets.add(ticket)
            self.urls_issued += 1
        port = self.relay.port if self.relay is not None else self.port
        return f"ws://127.0.0.1:{port}/link/?ticket={ticket}&app_id={APP_ID}"

    # ---- the websocket side --------------------------------------------------------------------------
    def _check_ticket(self, conn: ServerConnection, request: Any) -> Any:
        ticket = (parse_qs(urlsplit(request.path).query).get("ticket") or [""])[0]
        with self._lock:
            if ticket not in self._tickets:
                return conn.respond(HTTPStatus.FORBIDDEN, "invalid or used ticket\n")
            self._tickets.discard(ticket)
        return None

    def _serve(self, ws: ServerConnection) -> None:
        with self._lock:
            conn = Connection(len(self.connections) + 1, ws, time.monotonic())
            self.connections.append(conn)
            n = len(self.open_connections())
        hello = {
            "type": "hello",
            "num_connections": n,
            "debug_info": {"host": "applink-standin", "build_number": 1, "approximate_connection_time": 3600},
            "connection_info": {"app_id": APP_ID},
        }
        try:
            ws.send(json.dumps(hello))
            for raw in ws:
                self._received(conn, raw)
        except (ConnectionClosed, OSError):
            pass
        finally:
            with self._lock:
                if conn.closed_at is None:
                    conn.closed_at, conn.how = time.monotonic(), conn.how or "client"

    def _received(self, conn: Connection, raw: str | bytes) -> None:
        try:
            message = json.loads(raw)
            envelope_id = message["envelope_id"]
        except (ValueError, KeyError, TypeError):
            return  # Slack ignores what is not an acknowledgement
        with self._lock:
            if envelope_id in self._lost_acks:  # the acknowledgement is lost, and the connection with it
                self._lost_acks.discard(envelope_id)
                self._abort(conn, "dropped")
                return
            env = self.envelopes.get(envelope_id)
            if env is not None:
                env.acks.append(Ack(conn.number, message.get("payload"), time.monotonic()))

    def _abort(self, conn: Connection, how: str) -> None:
        """Close the TCP connection without a closing handshake (the app sees the socket drop)."""
        conn.closed_at, conn.how = time.monotonic(), how
        try:
            conn.ws.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        conn.ws.close_socket()

    # ---- envelopes -----------------------------------------------------------------------------------
    def open_connections(self) -> list[Connection]:
        with self._lock:
            return [c for c in self.connections if c.open]

    def send(self, type_: str, payload: dict[str, Any], to: int | None = None) -> Envelope:
        """Deliver an envelope to connection ``to`` (its number), else to the next open one in turn."""
        env = Envelope(f"env-{next(self._ids):06d}", type_, payload, type_ == "slash_commands")
        with self._lock:
            self.envelopes[env.envelope_id] = env
        self.deliver(env, to)
        return env

    def deliver(self, env: Envelope, to: int | None = None) -> None:
        """Send ``env`` (again) to connection ``to``, else to the next open one in turn."""
        with self._lock:
            open_ = self.open_connections()
            if to is not None:
                open_ = [c for c in open_ if c.number == to]
            if not open_:
                env.last_sent = time.monotonic()  # retried when a connection is open again
                return
            conn = open_[next(self._rotation) % len(open_)]
            env.deliveries.append(conn.number)
            env.last_sent = time.monotonic()
        try:
            conn.ws.send(env.frame())
        except (ConnectionClosed, OSError):
            pass  # as on Slack's side: not acknowledged, so delivered again

    def _redeliver(self) -> None:
        while not self._stop.wait(0.1):
            now = time.monotonic()
            with self._lock:
                due = [
                    e
                    for e in self.envelopes.values()
                    if not e.acked
                    and now - e.last_sent >= self.ack_timeout
                    and len(e.deliveries) <= self.max_retries
                ]
            for env in due:
                self.deliver(env)

    # ---- faults --------------------------------------------------------------------------------------
    def drop(self, number: int | None = None) -> None:
        """Drop a connection (the newest open one) without a closing handshake."""
        with self._lock:
            conn = self._pick(number)
            self._abort(conn, "dropped")

    def lose_ack(self, envelope_id: str) -> None:
        """The next acknowledgement of ``envelope_id`` is lost and its connection dropped with it."""
        with self._lock:
            self._lost_acks.add(envelope_id)

    def disconnect(
        self, number: int | None = None, reason: str = "refresh_requested", close_after: float = 2.0
    ) -> Connection:
        """Ask the app for a new connection (Slack's ``disconnect``), and close the old one a little later."""
        with self._lock:
            conn = self._pick(number)
        message = {"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-standin"}}
        conn.ws.send(json.dumps(message))

        def close() -> None:
            if not self._stop.wait(close_after) and conn.open:
                conn.how = "refreshed"
                conn.ws.close()

        threading.Thread(target=close, daemon=True).start()
        return conn

    def _pick(self, number: int | None) -> Connection:
        open_ = self.open_connections()
        picked = [c for c in open_ if number is None or c.number == number]
        assert picked, f"no open connection {number or ''} (open: {[c.number for c in open_]})"
        return picked[-1]

    # ---- waiting ---------------------------------------------------------------------------------------
    def wait(self, cond: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = cond()
            if got:
                return got
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; {self.describe()}")

    def wait_open(self, n: int = 1, timeout: float = 30) -> list[Connection]:
        def enough() -> list[Connection] | None:
            got = self.open_connections()
            return got if len(got) >= n else None

        return self.wait(enough, timeout, f"{n} open connection(s)")

    def wait_acked(self, env: Envelope, timeout: float = 30) -> Ack:
        return self.wait(lambda: env.acks[0] if env.acks else None, timeout, f"an ack of {env.envelope_id}")

    def describe(self) -> str:
        with self._lock:
            conns = [f"#{c.number} {'open' if c.open else c.how}" for c in self.connections]
            envs = [
                f"{e.envelope_id} sent to {e.deliveries} acked on {[a.connection for a in e.acks]}"
                for e in self.envelopes.values()
            ]
        return f"connections {conns}; envelopes {envs}"
