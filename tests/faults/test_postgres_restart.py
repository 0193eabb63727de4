"""PostgreSQL restarted under a running Service: a throwaway cluster is really stopped and started while
the stall alert of a simulated run comes due. The scheduler's guarded jobs survive the failed polls;
afterwards polling and delivery continue, and every alert is notified exactly once."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator

import psycopg
import pytest

from alerts.clock import ManualClock
from monitor.engine.scheduling import _guarded
from monitor.storage import migrate
from tests.faults.support import assert_exactly_once, cycle, rule_states, service_for

BIN = "/usr/lib/postgresql/15/bin"

CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    sim:
      seed: 3
      step_time: 10s
      incidents:
        - {kind: stall, at: 10m, duration: 30m}
rules: {packs: [hero]}
receivers: [{name: console, kind: console}]
route: {receiver: console, group_wait: 0s}
"""


def _as_postgres(*args: str) -> None:
    cmd = list(args)
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)


class Cluster:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="hw-faults-pg-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        os.mkdir(self.data)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
            shutil.chown(self.data, "postgres", "postgres")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        _as_postgres(f"{BIN}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres")

    def start(self) -> None:
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir}"
        _as_postgres(f"{BIN}/pg_ctl", "-D", self.data, "-o", opts, "-l", f"{self.dir}/log", "-w", "start")

    def stop(self) -> None:
        _as_postgres(f"{BIN}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def url(self, db: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{db}"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    c.start()
    try:
        yield c
    finally:
        try:
            c.stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(c.dir, ignore_errors=True)


def test_postgres_restart_under_the_running_service(cluster: Cluster) -> None:
    with psycopg.connect(f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres", autocommit=True) as c:
        c.execute("CREATE DATABASE hw")
    url = cluster.url("hw")
    migrate.upgrade(url)
    clock = ManualClock(1_780_000_000.0)
    service, out = service_for(CONFIG, url, clock)
    poll_job = _guarded("poll:hero-a", lambda: service.engine.poll("hero-a"))
    deliver_job = _guarded("outbox", service.dispatcher.run_once)
    try:
        for _ in range(20):  # healthy, then stalled from 10 min on; progress_stalled fires at ~25 min
            clock.advance(60)
            cycle(service)
        assert rule_states(service, "progress_stalled") == []
        cluster.stop()
        failed = 0
        for _ in range(8):  # the alert comes due while the database is down
            clock.advance(60)
            try:
                service.engine.poll("hero-a")
            except Exception:  # noqa: BLE001 - expected: the database is gone
                failed += 1
            poll_job()  # what the scheduler runs: must not raise
            deliver_job()
        assert failed == 8, "polls during the outage must fail, not pretend"
        cluster.start()
        for _ in range(3):  # the first use of a pooled connection may still see the old server
            clock.advance(60)
            poll_job()
            deliver_job()
        for _ in range(40):  # the stall goes on, then ends (40 min): fire, then resolve
            clock.advance(60)
            cycle(service)
        assert rule_states(service, "progress_stalled") == ["resolved"]
        counts = assert_exactly_once(service, out)
        assert counts[("progress_stalled", "sim:hero-a/hero-a", "firing")] == 1
        assert counts[("progress_stalled", "sim:hero-a/hero-a", "resolved")] == 1
        assert [k for k in counts if k[0] != "progress_stalled"] == [], counts
    finally:
        service.stop()
