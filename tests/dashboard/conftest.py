"""A real herowatch server (uvicorn on 127.0.0.1, a free port) over a Service on a manual clock, and a
real Chromium driven by Playwright (the session's one, tests/browser.py). Simulated time only moves
when a test ticks the clock; the browser's own refreshes are waited for with Playwright's expect,
never with sleeps.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import uvicorn

from alerts.clock import ManualClock
from monitor.service import Service
from monitor.web.app import create_app
from tests.dashboard.support import DASHBOARD_CONFIG, TOKEN, build
from tests.helpers import tick


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Live:
    url: str
    service: Service
    clock: ManualClock
    token: str = TOKEN
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=10))

    def tick(self, seconds: float, every: float = 60.0) -> None:
        tick(self.service, self.clock, seconds, every)

    def api(self, path: str, **params) -> object:  # noqa: ANN003
        r = self.http.get(self.url + path, params=params)
        r.raise_for_status()
        return r.json()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    clock = ManualClock(1_780_000_000.0)
    service = build(f"sqlite:///{tmp_path / 'herowatch.db'}", clock, DASHBOARD_CONFIG)
    with serving(service, clock) as live:
        yield live


@contextmanager
def serving(service: Service, clock: ManualClock) -> Iterator[Live]:
    """``service`` behind a real uvicorn on a free port, until the block ends (then stopped)."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(service), host="127.0.0.1", port=port, log_level="warning", access_log=False
        )
    )
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    live = Live(f"http://127.0.0.1:{port}", service, clock)
    try:
        yield live
    finally:
        server.should_exit = True
        thread.join(15)
        live.http.close()
        service.stop()
