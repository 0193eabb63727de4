"""``SlackStandin``: the Slack stand-in as tests drive it. It starts and stops the HTTP server
(tests/standins/slack/handler.py), holds the workspace state the API methods work on (messages.py,
files.py), injects faults for the next calls and shows tests what happened: the calls, the messages per
channel with their threads and edits, what notified people."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable

from tests.standins.slack.checks import method_set
from tests.standins.slack.files import FileMethods
from tests.standins.slack.handler import Handler, Server
from tests.standins.slack.people import PeopleMethods, Response
from tests.standins.slack.records import (
    ALL_SCOPES,
    APP_TOKEN,
    DEFAULT_TOKEN,
    Call,
    Fault,
    StoredMessage,
    Upload,
)
from tests.standins.slack.socket_mode import SocketModeServer


class SlackStandin(FileMethods, PeopleMethods):
    """The server, its workspace state (channels, messages, files), faults and the call record.
    Use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(
        self,
        token: str = DEFAULT_TOKEN,
        channels: Iterable[str] = ("C0ALERTS",),
        bot_user: str = "U0HEROBOT",
        clock: Callable[[], float] = time.time,
        app_token: str = APP_TOKEN,
    ) -> None:
        self.token = token
        self.app_token = app_token
        self.bot_user = bot_user
        self.clock = clock
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.channels: dict[str, list[StoredMessage]] = {c: [] for c in channels}  # top level, oldest first
        self.uploads: dict[str, Upload] = {}
        self._messages: dict[tuple[str, str], StoredMessage] = {}
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._last_us = 0
        self._file_ids = itertools.count(1)
        self._server: Server | None = None
        self._port = 0
        self.scopes: list[str] = list(ALL_SCOPES)
        self.outside: set[str] = set()  # channels the bot was never invited to
        self.private: set[str] = set()
        self.socket = SocketModeServer()  # Socket Mode: apps.connections.open and the websocket
        self.responses: list[Response] = []  # what the app posted to requests' response_url
        self._triggers = itertools.count(1)

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(self) -> SlackStandin:
        self._stopping.clear()
        handler = type("Handler", (Handler,), {"standin": self})
        self._server = Server(("127.0.0.1", self._port), handler)
        self._port = self._server.server_address[1]
        threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="slack-standin", daemon=True
        ).start()
        self.socket.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # ends injected delays at once
        self.socket.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> SlackStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._port, "not started"
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_url(self) -> str:
        """What to pass as ``WebClient(base_url=...)``."""
        return f"{self.url}/api/"

    def _m_apps_connections_open(self, body: dict[str, object]) -> dict[str, object]:
        """Socket Mode: a websocket URL good for one connection (tests/standins/slack/socket_mode.py)."""
        return {"url": self.socket.issue_url()}

    # ---- faults ----------------------------------------------------------------------------------
    def inject(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def fail(self, status: int = 500, times: int = 1, methods: Iterable[str] | None = None) -> Fault:
        return self.inject(Fault(status=status, times=times, methods=method_set(methods)))

    def rate_limit(
        self, retry_after: float = 30, times: int = 1, methods: Iterable[str] | None = None
    ) -> Fault:
        return self.inject(
            Fault(status=429, retry_after=retry_after, times=times, methods=method_set(methods))
        )

    def error(self, code: str, times: int = 1, methods: Iterable[str] | None = None) -> Fault:
        return self.inject(Fault(error=code, times=times, methods=method_set(methods)))

    def slow(
        self, delay: float, times: int = 1, methods: Iterable[str] | None = None, after_effect: bool = False
    ) -> Fault:
        return self.inject(
            Fault(delay=delay, times=times, methods=method_set(methods), after_effect=after_effect)
        )

    def clear_faults(self) -> None:
        with self._lock:
            self.faults.clear()

    def _take_fault(self, method: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times != 0 and (fault.methods is None or method in fault.methods):
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
        return None

    # ---- what tests look at ----------------------------------------------------------------------
    def calls_to(self, *methods: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if not methods or c.method in methods]

    def methods(self) -> list[str]:
        with self._lock:
            return [c.method for c in self.calls]

    def reset_calls(self) -> None:
        with self._lock:
            self.calls.clear()

    def add_channel(self, channel: str) -> None:
        with self._lock:
            self.channels.setdefault(channel, [])

    def roots(self, channel: str) -> list[StoredMessage]:
        """Top-level messages of ``channel`` (not thread broadcasts), oldest first."""
        with self._lock:
            return [m for m in self.channels[channel] if not m.thread_ts]

    def message(self, channel: str, ts: str) -> StoredMessage:
        with self._lock:
            return self._messages[(channel, ts)]

    def pages(self, channel: str) -> list[str]:
        """What notified people in ``channel``, oldest first: the text of every top-level message and
        every thread reply also sent to the channel (``reply_broadcast``), as first posted. Edits and
        quiet thread replies notify nobody, so they are not here."""
        with self._lock:
            out = []
            for m in sorted(self._messages.values(), key=lambda m: float(m.ts)):
                if m.channel == channel and (not m.thread_ts or m.broadcast) and not m.files:
                    out.append(m.edits[0]["text"] if m.edits else m.text)
            return out

    def thread(self, channel: str, ts: str) -> list[StoredMessage]:
        """The replies to ``ts``, oldest first."""
        with self._lock:
            return [self._messages[(channel, r)] for r in self._messages[(channel, ts)].replies]
