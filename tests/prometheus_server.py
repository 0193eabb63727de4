"""A real Prometheus server for tests: started on 127.0.0.1 at a free port, killed at the end.

Needs ``/usr/bin/prometheus`` and ``/usr/bin/promtool`` (Debian: ``apt-get install -y
--no-install-recommends prometheus``). Without them the tests FAIL: they are not optional.

History is backfilled with ``promtool tsdb create-blocks-from openmetrics``; live data comes from a
scrape config. Nothing here sleeps a fixed time: everything waits for a condition with a deadline.
"""

from __future__ import annotations

import atexit
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

INSTALL = "apt-get update && apt-get install -y --no-install-recommends prometheus"
T = TypeVar("T")

_LIVE: set[subprocess.Popen[bytes]] = set()


@atexit.register
def _kill_leftovers() -> None:  # a safety net if a test run is interrupted before teardown
    for proc in list(_LIVE):
        proc.kill()


def binaries() -> tuple[str, str]:
    """Paths of prometheus and promtool; fails the test (never skips) if they are missing."""
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not prometheus or not promtool:
        pytest.fail(f"prometheus/promtool not found on PATH: install them with `{INSTALL}`", pytrace=False)
    return prometheus, promtool


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.1) -> T:
    """Call ``check`` until it returns something other than None/False, or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = check()
            if value is not None and value is not False:
                return value
        except Exception as exc:  # noqa: BLE001 - keep polling until the deadline
            last_error = exc
        if time.monotonic() > deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}{detail}")
        time.sleep(interval)


def openmetrics(
    families: Iterable[tuple[str, str, Sequence[tuple[dict[str, str], Iterable[tuple[float, float]]]]]],
) -> str:
    """OpenMetrics text from (name, type, [(labels, [(t seconds, value)])]); counters get ``_total``."""

    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    def num(v: float) -> str:
        if v != v:
            return "NaN"
        if v in (float("inf"), float("-inf")):
            return "+Inf" if v > 0 else "-Inf"
        return repr(float(v))

    lines: list[str] = []
    for name, kind, series in families:
        lines.append(f"# TYPE {name} {kind}")
        sample = f"{name}_total" if kind == "counter" else name
        for labels, points in series:
            text = ",".join(f'{k}="{esc(v)}"' for k, v in labels.items())
            lines.extend(f"{sample}{{{text}}} {num(v)} {t:.3f}" for t, v in points)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def backfill(text: str, tsdb: Path) -> None:
    """Write ``text`` (OpenMetrics) into blocks under ``tsdb`` with promtool."""
    _, promtool = binaries()
    tsdb.mkdir(parents=True, exist_ok=True)
    source = tsdb.parent / f"{tsdb.name}-history.om"
    source.write_text(text)
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(tsdb)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"promtool failed ({done.returncode}): {done.stderr[-2000:]}")


class PrometheusServer:
    """One Prometheus process: ``start()``, ``kill()``, ``start()`` again on the same port and data."""

    def __init__(self, workdir: Path, scrape_configs: list[dict[str, Any]] | None = None) -> None:
        self.workdir = workdir
        self.tsdb = workdir / "data"
        self.config_file = workdir / "prometheus.yml"
        self.log_file = workdir / "prometheus.log"
        self.scrape_configs = scrape_configs or []
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _write_config(self) -> None:
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": self.scrape_configs,
        }
        self.config_file.write_text(json.dumps(config, indent=2))  # JSON is YAML

    def start(self, timeout: float = 30.0) -> None:
        prometheus, _ = binaries()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.tsdb.mkdir(parents=True, exist_ok=True)
        self._write_config()
        for attempt in range(3):  # the free port may be taken in between: pick another one
            with self.log_file.open("ab") as log:
                self.proc = subprocess.Popen(
                    [
                        prometheus,
                        f"--config.file={self.config_file}",
                        f"--storage.tsdb.path={self.tsdb}",
                        "--storage.tsdb.retention.time=10y",
                        f"--web.listen-address=127.0.0.1:{self.port}",
                        "--web.enable-lifecycle",
                        "--log.level=warn",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            _LIVE.add(self.proc)
            try:
                wait_for(self._ready, timeout, f"prometheus on {self.url} to be ready", interval=0.05)
                return
            except AssertionError:
                exited = self.proc.poll() is not None
                self.kill()
                if exited and "address already in use" in self.log_file.read_text() and attempt < 2:
                    self.port = free_port()
                    continue
                raise AssertionError(
                    f"prometheus did not start; its log:\n{self.log_file.read_text()[-3000:]}"
                ) from None

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited with {self.proc.returncode}")
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=1.0).status_code == 200
        except httpx.TransportError:
            return False

    def kill(self) -> None:
        """Stop the process at once (SIGKILL), as a crash would."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=30)
            _LIVE.discard(self.proc)
            self.proc = None

    def reload(self, scrape_configs: list[dict[str, Any]]) -> None:
        self.scrape_configs = scrape_configs
        self._write_config()
        httpx.post(f"{self.url}/-/reload", timeout=10.0).raise_for_status()

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        params: dict[str, str] = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        body = httpx.get(f"{self.url}/api/v1/query", params=params, timeout=10.0).json()
        assert body["status"] == "success", body
        return body["data"]["result"]

    def __enter__(self) -> PrometheusServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
