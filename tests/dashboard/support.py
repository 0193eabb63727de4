"""Builders shared by the API tests (tests/test_api*.py) and the browser tests (tests/dashboard/)."""

from __future__ import annotations

import io
from pathlib import Path

from fastapi.testclient import TestClient

from alerts.clock import Clock
from alerts.notifiers.console import ConsoleNotifier
from monitor.config.loader import parse_config
from monitor.service import Service, build_service
from monitor.settings import Settings
from monitor.web.app import create_app
from tests.helpers import STALL_CONFIG

TOKEN = "test-token-7f3a9c-0123456789abcdefghij"  # a fake, 32+ characters like a real one
XSS = "<img src=x onerror=alert(1)>"

# hero-a stalls 10 minutes in (the alert fires about 15 minutes later), hero-b restarts and rewinds
# 30 minutes in and has a one-step loss spike, and a third run is named like an XSS payload.
DASHBOARD_CONFIG = f"""
watch:
  - name: hero-a
    poll_interval: 60s
    target_step: 250000
    labels: {{team: pretrain}}
    sim:
      seed: 3
      step_time: 10s
      checkpoint_every: 50
      checkpoint_pause: 60s
      target_step: 250000
      incidents:
        - {{kind: stall, at: 10m, duration: 30m}}
  - name: hero-b
    poll_interval: 60s
    target_step: 250000
    labels: {{team: pretrain}}
    sim:
      seed: 4
      step_time: 12s
      checkpoint_every: 100
      restore_time: 240s
      target_step: 250000
      incidents:
        - {{kind: loss_spike, at: 20m, magnitude: 1.5}}
        - {{kind: restart, at: 30m}}
  - name: odd-name
    poll_interval: 60s
    sim:
      run: "{XSS}"
      seed: 5
      step_time: 11s
"""


def build(
    db_url: str,
    clock: Clock,
    text: str = STALL_CONFIG,
    *,
    token: str | None = TOKEN,
    protect_reads: bool = False,
    **secrets: str,
) -> Service:
    """``secrets``: further settings from the environment, e.g. WANDB_API_KEY."""
    env = {"database_url": db_url, "protect_reads": protect_reads, **secrets}
    if token is not None:
        env["HEROWATCH_API_TOKEN"] = token
    cfg = parse_config(text, "test.yaml")
    service = build_service(cfg, Settings(**env), clock, base_dir=Path("."), auto_migrate=True)
    service.dispatcher.notifiers = {"console": ConsoleNotifier(stream=io.StringIO())}
    service.engine.resume()
    return service


def client(service: Service) -> TestClient:
    return TestClient(create_app(service), base_url="http://localhost", raise_server_exceptions=False)


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
