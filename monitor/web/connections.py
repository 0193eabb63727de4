"""The HTTP server's own door: a time limit on request headers and a cap on open connections.

uvicorn (h11) waits for a request's headers as long as the client likes, and accepts connections until
the process runs out of open files; then ``accept()`` fails, asyncio logs it on every try, and
``/healthz`` and ``/api/ingest`` time out (issue 37: 20,000 idle half-sent requests did that). Here:

- a connection that has not sent its whole request line and headers within ``HEROWATCH_HEADER_TIMEOUT``
  seconds (10) of connecting, or of starting its next request, is closed;
- at most ``HEROWATCH_MAX_CONNECTIONS`` (1,000) connections are open, and never more than the open-file
  limit less a reserve for the database, sources and logs. A connection over the cap closes the
  oldest one still waiting for its headers (a client that sent a whole request is served before one
  that sends nothing); if none is waiting, the new connection is closed at once;
- what was closed is counted, and logged as a count at most once a minute, not a line per connection.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

FILE_RESERVE = 64  # open files kept for everything but HTTP connections (database, sources, logs)
ACCEPT_BATCH = 64  # the listen backlog, which is also how many connections asyncio accepts at once
IN_FLIGHT_BATCHES = 4  # accepted before the first of them reaches the cap check (event-loop turns)
REPORT_EVERY = 60.0


def raise_file_limit() -> int:
    """Raise this process's soft open-file limit to its hard limit (as far as allowed); the soft
    limit it has now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_cap(wanted: int, file_limit: int) -> int:
    """The cap on open connections: ``wanted``, below the open-file limit less a reserve for other
    files and for the connections asyncio accepts before the cap sees them (a burst of connects)."""
    return max(8, min(wanted, file_limit - FILE_RESERVE - IN_FLIGHT_BATCHES * ACCEPT_BATCH))


@dataclass
class Guard:
    """The connections of one server: which wait for headers (oldest first), and what was closed."""

    cap: int
    header_timeout: float
    waiting: OrderedDict = field(default_factory=OrderedDict)  # protocol -> when it began waiting
    closed: dict[str, int] = field(default_factory=lambda: {"header_timeout": 0, "evicted": 0, "refused": 0})
    _told: dict[str, int] = field(default_factory=dict)
    _reported: float = 0.0

    def count(self, why: str) -> None:
        self.closed[why] += 1
        now = time.monotonic()
        if now - self._reported < REPORT_EVERY:
            return
        new = {k: v - self._told.get(k, 0) for k, v in self.closed.items()}
        self._told, self._reported = dict(self.closed), now
        log.warning(
            "HTTP connections closed in the last minute: %d sent no headers within %gs "
            "(HEROWATCH_HEADER_TIMEOUT), %d closed and %d refused at the cap of %d "
            "(HEROWATCH_MAX_CONNECTIONS)",
            new["header_timeout"],
            self.header_timeout,
            new["evicted"],
            new["refused"],
            self.cap,
        )


def guarded_protocol(guard: Guard) -> type[H11Protocol]:
    """uvicorn's h11 protocol with ``guard``'s header time limit and connection cap."""

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > guard.cap:
                oldest = next((p for p in guard.waiting if p is not self), None)
                if oldest is None:
                    guard.count("refused")
                    transport.abort()
                    return
                guard.count("evicted")
                oldest._give_up()
            self._wait_for_headers()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and self._header_timer is None and data:
                self._wait_for_headers()  # the next request of a kept-alive connection began
            elif self.conn.their_state is not h11.IDLE:
                self._headers_done()

        def connection_lost(self, exc: Exception | None) -> None:
            self._headers_done()
            super().connection_lost(exc)

        def _wait_for_headers(self) -> None:
            guard.waiting[self] = time.monotonic()
            self._header_timer = self.loop.call_later(guard.header_timeout, self._header_timeout)

        def _headers_done(self) -> None:
            guard.waiting.pop(self, None)
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timeout(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE:
                guard.count("header_timeout")
                self._give_up()

        def _give_up(self) -> None:
            self._headers_done()
            self.transport.abort()

    return GuardedH11Protocol
