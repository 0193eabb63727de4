"""A real Alertmanager for tests (Debian's ``prometheus-alertmanager``): started on 127.0.0.1 at a free
port with HA mode off and a config that routes every alert to a webhook the test listens on
(:class:`WebhookSink`), killed at the end. Without the binary the tests FAIL with the install hint:
they are not optional. Nothing here sleeps a fixed time: everything waits for a condition."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.prometheus_server import _LIVE, free_port, wait_for

INSTALL = "apt-get update && apt-get install -y --no-install-recommends prometheus-alertmanager"
NAMES = ("prometheus-alertmanager", "alertmanager")


def binary() -> str:
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(f"Alertmanager not found on PATH: install it with `{INSTALL}`", pytrace=False)


class WebhookSink:
    """What Alertmanager notifies: an HTTP server on loopback keeping every webhook body it gets."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with sink._lock:
                    sink.bodies.append(body)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def notified(self, status: str, alertname: str) -> list[dict[str, Any]]:
        """The alerts Alertmanager notified with this status (firing / resolved) and name."""
        with self._lock:
            return [
                a
                for b in self.bodies
                for a in b.get("alerts", [])
                if a.get("status") == status and a["labels"].get("alertname") == alertname
            ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class AlertmanagerServer:
    def __init__(
        self, workdir: Path, webhook_url: str, group_by: tuple[str, ...] = ("alertname", "run")
    ) -> None:
        self.workdir = workdir
        self.webhook_url = webhook_url
        self.group_by = group_by
        self.port = free_port()
        self.log_file = workdir / "alertmanager.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _write_config(self) -> Path:
        config = {
            "route": {
                "receiver": "hook",
                "group_by": list(self.group_by),
                "group_wait": "0s",
                "group_interval": "1s",
                "repeat_interval": "1h",
            },
            "receivers": [
                {"name": "hook", "webhook_configs": [{"url": self.webhook_url, "send_resolved": True}]}
            ],
        }
        path = self.workdir / "alertmanager.yml"
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        return path

    def start(self, timeout: float = 30.0) -> None:
        exe = binary()
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        for attempt in range(3):  # the free port may be taken in between: pick another one
            with self.log_file.open("ab") as log:
                self.proc = subprocess.Popen(
                    [
                        exe,
                        f"--config.file={config}",
                        f"--storage.path={self.workdir / 'data'}",
                        f"--web.listen-address=127.0.0.1:{self.port}",
                        "--cluster.listen-address=",  # no HA mode: nothing else to bind
                        "--log.level=warn",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            _LIVE.add(self.proc)
            try:
                wait_for(self._ready, timeout, f"alertmanager on {self.url} to be ready", interval=0.05)
                return
            except AssertionError:
                exited = self.proc.poll() is not None
                self.kill()
                if exited and "address already in use" in self.log_file.read_text() and attempt < 2:
                    self.port = free_port()
                    continue
                raise AssertionError(
                    f"alertmanager did not start; its log:\n{self.log_file.read_text()[-3000:]}"
                ) from None

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"alertmanager exited with {self.proc.returncode}")
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=1.0).status_code == 200
        except httpx.TransportError:
            return False

    def alerts(self, **filters: str) -> list[dict[str, Any]]:
        """GET /api/v2/alerts: the alerts Alertmanager holds as active (resolved ones drop out)."""
        r = httpx.get(f"{self.url}/api/v2/alerts", params=filters, timeout=10.0)
        r.raise_for_status()
        return r.json()

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=30)
            _LIVE.discard(self.proc)
            self.proc = None

    def __enter__(self) -> AlertmanagerServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
