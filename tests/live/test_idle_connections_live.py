"""Idle half-sent requests cannot take ``herowatch serve`` off the air, live (issue 37: 20,000 of them
exhausted the open files; ``/healthz`` and ``/api/ingest`` timed out and the log grew 248 MB in 30 s).

A real ``herowatch serve`` with an open-file limit of 512 gets 600 connections that each send
``GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n`` and then nothing. Its connection cap (below the file
limit) and header time limit keep it serving: ``/healthz`` answers meanwhile, its open files stay under
the limit, the idle connections are closed once their time is up, and the log says so as a count."""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import REPO
from tests.live.sources_support import source_stack
from tests.live.support import wait_for
from tests.prometheus_server import free_port

FILES = 512
IDLE = 600
HALF = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"


def open_files(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def healthz(url: str) -> float | None:
    """Seconds /healthz took to answer 200, or None."""
    start = time.monotonic()
    try:
        ok = httpx.get(url + "/healthz", timeout=3).status_code == 200
    except httpx.HTTPError:
        return None
    return time.monotonic() - start if ok else None


def test_idle_half_sent_requests_are_capped_and_timed_out_and_healthz_answers(tmp_path):
    with source_stack(tmp_path) as stack:
        cfg = stack.write_config("    push: {token_env: HERO_INGEST_TOKEN}", "        {}\n")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**stack.env(), "HEROWATCH_HEADER_TIMEOUT": "4"}
        log = tmp_path / "serve.log"

        def low_file_limit() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, FILES))

        proc = subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", "serve", "-c", str(cfg), "--listen", f"127.0.0.1:{port}"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log.open("ab"),
            preexec_fn=low_file_limit,  # noqa: PLW1509 - the child's own limit, set before exec
        )
        idle: list[socket.socket] = []
        try:
            wait_for(lambda: healthz(url) is not None, 60, "herowatch serve to answer")
            for _ in range(IDLE):
                s = socket.create_connection(("127.0.0.1", port))
                s.sendall(HALF)
                idle.append(s)
            took = [healthz(url) for _ in range(5)]
            assert all(t is not None and t < 2 for t in took), f"/healthz under {IDLE} idle requests: {took}"
            assert open_files(proc.pid) < FILES - 64, open_files(proc.pid)

            def closed_by_server(s: socket.socket) -> bool:
                s.settimeout(0.01)
                try:
                    return s.recv(1) == b""
                except TimeoutError:
                    return False
                except OSError:
                    return True

            wait_for(lambda: all(closed_by_server(s) for s in idle), 30, "the server to close every idle one")
            assert proc.poll() is None
            assert healthz(url) is not None
        finally:
            for s in idle:
                s.close()
            proc.terminate()
            proc.wait(20)
        text = log.read_text(errors="replace")
        assert "out of system resource" not in text and "Too many open files" not in text, text[-2000:]
        counts = [line for line in text.splitlines() if "HTTP connections closed" in line]
        assert 1 <= len(counts) <= 3, counts
        assert len(text) < 50_000, f"the log grew {len(text)} bytes"
