"""The security suite's servers: real herowatch processes (uvicorn on 127.0.0.1, a free port) on the real
PostgreSQL, configured through the environment as an operator would, attacked over real sockets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, _fresh_pg_database
from tests.dashboard.conftest import free_port

TOKEN = "security-suite-token-0123456789abcdefghij"  # a fake: tests never hold real secrets
SECRET = "test-signing-secret-0000"  # the one tests.test_slack_interactions signs with
TEAM = "T0HERO"  # the workspace click() comes from
HOST = "herowatch.test"
PROXY = "127.0.0.2"  # the trusted reverse proxy (a loopback address the tests can send from)

DEFAULT_ENV = {
    "HEROWATCH_API_TOKEN": TOKEN,
    "SLACK_SIGNING_SECRET": SECRET,
    "HEROWATCH_SLACK_TEAM_ID": TEAM,
    "HEROWATCH_PROTECT_READS": "true",
    "HEROWATCH_ALLOWED_HOSTS": HOST,
    "HEROWATCH_TRUSTED_PROXIES": PROXY,
}


@dataclass
class Server:
    url: str
    port: int
    proc: subprocess.Popen
    db_url: str
    alert_id: int
    group_key: str
    now: float
    log: Path  # the server's stderr: its log

    def log_lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss_mb(self) -> float:
        """The server process's resident memory, from /proc."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    def client(self, local_address: str | None = None, **kw) -> httpx.Client:  # noqa: ANN003
        transport = httpx.HTTPTransport(local_address=local_address) if local_address else None
        kw.setdefault("follow_redirects", True)
        return httpx.Client(base_url=self.url, timeout=30, transport=transport, **kw)

    def bearer(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {TOKEN}"}


def start_server(tmp: Path, db_url: str, env: dict[str, str]) -> Server:
    port = free_port()
    info = tmp / f"server-{port}.json"
    full = {k: v for k, v in os.environ.items() if not k.startswith(("HEROWATCH_", "SLACK_"))}
    full.update({**env, "PYTHONPATH": str(REPO)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.security.server", db_url, str(port), str(info)],
        cwd=REPO,
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / f"server-{port}.log", "ab"),  # noqa: SIM115 - appended to across restarts
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, (tmp / f"server-{port}.log").read_text()
        assert time.monotonic() < deadline, "the server did not start within 60 s"
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    facts = json.loads(info.read_text())
    log = tmp / f"server-{port}.log"
    return Server(url, port, proc, db_url, facts["alert_id"], facts["group_key"], facts["now"], log)


def stop_server(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(15)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait(5)


@pytest.fixture(scope="session")
def server(tmp_path_factory, pg_server_url) -> Iterator[Server]:
    """The hardened server as an operator would deploy it (token, Slack, protected reads, allowed
    hosts, a trusted proxy) on PostgreSQL, which refuses NUL bytes and ids past 32 bits."""
    db_url, drop = _fresh_pg_database(pg_server_url)
    s = start_server(tmp_path_factory.mktemp("security"), db_url, DEFAULT_ENV)
    try:
        yield s
    finally:
        stop_server(s)
        drop()


@pytest.fixture
def servers(tmp_path, pg_server_url) -> Iterator[Callable[..., Server]]:
    """Start servers of one's own (a fresh database unless given one), stopped after the test:
    ``servers(env)``, ``servers(env, db_url=...)`` to restart on the same database."""
    started: list[Server] = []
    drops = []

    def start(env: dict[str, str] | None = None, db_url: str | None = None) -> Server:
        if db_url is None:
            db_url, drop = _fresh_pg_database(pg_server_url)
            drops.append(drop)
        s = start_server(tmp_path, db_url, {**DEFAULT_ENV, **(env or {})})
        started.append(s)
        return s

    try:
        yield start
    finally:
        for s in started:
            stop_server(s)
        for drop in drops:
            drop()
