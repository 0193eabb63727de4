"""One fleet world for the whole package (built once: the real parts are slow to start):

- three runs of 88 hosts x 8 GPUs, each behind its own real ``prometheus_client`` exporter
  (tests/fleet/exporter.py), scraped by one real Prometheus server with honoured timestamps, so that
  ten minutes of fleet are ingested in seconds;
- herowatch on PostgreSQL and a manual clock, one watch per run with the simulated trainer (steps,
  tokens/s) and the Prometheus source with ``fleet: {}`` (the default dcgm-exporter and
  node-exporter queries), alerts routed to the Slack stand-in through the real slack-sdk;
- the scenarios of issue 17: (a) ``run-a`` stalls with every GPU idle and one host still reading a
  checkpoint from the network; (b) ``run-b`` has one throttled GPU and loses a few percent of tokens/s;
  (c) ``run-c`` stalls with nothing odd in its fleet.

The clock then moves through the ten minutes a poll a minute. Tests read the result through the API,
the Slack stand-in and (tests/fleet/test_raster_page.py) a real Chromium.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from alerts.clock import ManualClock
from monitor.service import Service
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Run
from monitor.web.app import create_app
from tests.conftest import _fresh_pg_database
from tests.dashboard.conftest import free_port
from tests.fleet.exporter import FleetCollector, FleetExporter, Scenario
from tests.helpers import make_service, tick
from tests.prometheus_server import PrometheusServer, wait_for
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin

STEP = 15.0
TICKS = 42  # 10.5 minutes of fleet
CHANNEL = "C0FLEET"
# The simulated trainers start at the first poll (t0 + 60 s): their incidents at 2 and 4 minutes fall on
# ticks 12 and 20 of the fleet.
SCENARIOS = {
    "a": Scenario("run-a", "a", "stuck_restore", onset=12, odd_host=17),
    "b": Scenario("run-b", "b", "throttled_gpu", onset=20, odd_host=42, odd_gpu=3, seed=2),
    "c": Scenario("run-c", "c", "all_stall", onset=12, seed=3),
}

CONFIG = """
watch:
  - name: stuck-restore
    poll_interval: 60s
    sim: {{run: run-a, seed: 1, step_time: 10s, incidents: [{{kind: stall, at: 2m, duration: 2h}}]}}
    prometheus: {{url: '{url}', runs: [run-a], step: 15s, lookback: 5m, fleet: {{}}}}
  - name: throttled-gpu
    poll_interval: 60s
    sim: {{run: run-b, seed: 2, step_time: 10s, incidents: [{{kind: throughput_drop, at: 4m, factor: 0.96}}]}}
    prometheus: {{url: '{url}', runs: [run-b], step: 15s, lookback: 5m, fleet: {{}}}}
  - name: all-stall
    poll_interval: 60s
    sim: {{run: run-c, seed: 3, step_time: 10s, incidents: [{{kind: stall, at: 2m, duration: 2h}}]}}
    prometheus: {{url: '{url}', runs: [run-c], step: 15s, lookback: 5m, fleet: {{}}}}
rules:
  overrides:
    progress_stalled: {{floor: 4m}}
    gpu_straggler: {{window: 1m, baseline: 3m, for: 1m}}
receivers:
  - {{name: oncall, kind: slack, channel: {channel}, base_url: '{slack}', timeout: 5s}}
route: {{receiver: oncall, group_wait: 1s, group_interval: 1m}}
"""


@dataclass
class World:
    service: Service
    clock: ManualClock
    slack: SlackStandin
    prom: PrometheusServer
    t0: float
    api: TestClient
    poll_seconds: list[float] = field(default_factory=list)
    url: str = ""  # the herowatch server for the browser (``served``)

    def alerts(self, run: str, rule: str | None = None) -> list[dict]:
        got = self.api.get("/api/alerts", params={"run": run})
        assert got.status_code == 200, got.text
        return [a for a in got.json() if rule is None or a["rule"] == rule]


def _confirm(prom: PrometheusServer, c: FleetCollector, sc: Scenario):  # noqa: ANN202
    probe = f'timestamp(DCGM_FI_PROF_SM_ACTIVE{{pod="{sc.run}-worker-0", gpu="0"}})'

    def has(k: int) -> bool:
        t = c.tick_time(k)
        try:
            got = prom.query(probe, at=t)
        except Exception:  # noqa: BLE001 - not up yet: serve the tick again
            return False
        return bool(got) and float(got[0]["value"][1]) == t

    return has


def _ingested(prom: PrometheusServer, exporters: list[FleetExporter]) -> None:
    """Every tick of every run is in Prometheus."""
    for e in exporters:
        e.served.wait(120)
        assert e.served.is_set(), e.failed or "the exporter did not get through its ticks in 2 minutes"
    last = exporters[0].collector.tick_time(TICKS - 1)
    window = f"{int(TICKS * STEP)}s"
    for sc in SCENARIOS.values():
        q = f'min(count_over_time(DCGM_FI_PROF_SM_ACTIVE{{pod=~"{sc.run}-.*"}}[{window}]))'
        wait_for(lambda q=q: prom.query(q, at=last) or None, 30, f"{sc.run}'s fleet in Prometheus")
        got = float(prom.query(q, at=last)[0]["value"][1])
        assert got == TICKS, f"{sc.run}: {got:g} of {TICKS} ticks ingested (a scrape timed out?)"


@pytest.fixture
def fleet_db(migrated_url: str) -> Iterator[sessionmaker[Session]]:
    """A migrated database (SQLite, then PostgreSQL) holding the run ``r`` a raster is kept for."""
    db = make_engine(migrated_url)
    sessions = make_sessionmaker(db)
    with sessions.begin() as s:
        s.add(Run(id="r", watch="w", source="prometheus", first_seen_at=0.0, labels={}, restarts=0))
    yield sessions
    db.dispose()


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory, pg_server_url: str) -> Iterator[World]:
    t0 = (int(time.time()) - 1800) // int(STEP) * STEP  # within the server's head block (the last hour)
    collectors = [FleetCollector([sc], t0, TICKS, STEP) for sc in SCENARIOS.values()]
    db_url, drop = _fresh_pg_database(pg_server_url)
    with ExitStack() as stack, pytest.MonkeyPatch.context() as mp:
        stack.callback(drop)
        mp.setenv("SLACK_BOT_TOKEN", DEFAULT_TOKEN)
        exporters = [stack.enter_context(FleetExporter(c)) for c in collectors]
        scrape = {
            "job_name": "fleet",
            "scrape_interval": "250ms",
            "scrape_timeout": "240ms",
            "honor_labels": True,  # node-exporter's job per run, as federated
            "static_configs": [{"targets": [e.target for e in exporters]}],
        }
        prom = stack.enter_context(PrometheusServer(tmp_path_factory.mktemp("prometheus"), [scrape]))
        for e, sc in zip(exporters, SCENARIOS.values(), strict=True):
            e.drive(_confirm(prom, e.collector, sc))
        slack = stack.enter_context(SlackStandin(channels=[CHANNEL]))
        _ingested(prom, exporters)
        clock = ManualClock(t0)
        text = CONFIG.format(url=prom.url, slack=slack.api_url, channel=CHANNEL)
        service, _ = make_service(db_url, clock, text, keep_notifiers=True)
        stack.callback(service.stop)  # before its database goes (callbacks run last first)
        service.engine.resume()
        world = World(
            service, clock, slack, prom, t0, TestClient(create_app(service), base_url="http://localhost")
        )
        for _ in range(10):
            started = time.perf_counter()
            tick(service, clock, 60.0)
            world.poll_seconds.append(time.perf_counter() - started)
        service.dispatcher.run_once()
        yield world


@pytest.fixture(scope="package")
def served(world: World) -> Iterator[World]:
    """The world's herowatch behind a real HTTP server (uvicorn on 127.0.0.1), for the browser."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(world.service), host="127.0.0.1", port=port, log_level="warning", access_log=False
        )
    )
    thread = threading.Thread(target=server.run, name="uvicorn-fleet", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    world.url = f"http://127.0.0.1:{port}"
    try:
        assert httpx.get(world.url + "/healthz", timeout=5).status_code == 200
        yield world
    finally:
        server.should_exit = True
        thread.join(15)
