"""Never "ready" without seeing (issue 37): a W&B watch started without WANDB_API_KEY. Before, /readyz
said ready, ``source_unavailable`` fired as a warning that the README's route sends to the dashboard
only (nothing reached a person, ever), and its link was a 404. Now /readyz is not ready while the watch
was never read, ``source_down`` (critical) reaches the on-call receiver after the grace, its link lands
on the watch's page with the error, and a brief outage stays one quiet warning."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select

from alerts.clock import ManualClock
from monitor.storage.models import Alert
from monitor.web.app import create_app
from tests.helpers import make_service

CONFIG = """
watch:
  - name: pretrain-70b
    poll_interval: 30s
    wandb: {entity: my-team, project: llm}
receivers:
  - {name: console, kind: console}
  - {name: board, kind: dashboard}
route:
  receiver: console
  group_by: [run]
  group_wait: 30s
  routes:
    - {matchers: ['severity="warning"'], receiver: board}
"""


def fired(service) -> dict[str, tuple[str, str]]:
    with service.sessions() as s:
        return {a.rule: (a.state, a.severity) for a in s.scalars(select(Alert))}


def run(service, clock, minutes: float) -> None:
    for _ in range(int(minutes * 2)):
        clock.advance(30)
        service.engine.poll("pretrain-70b")
        service.engine.check_health()
        service.dispatcher.run_once()


def test_a_watch_never_read_is_not_ready_and_pages_after_the_grace(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    clock = ManualClock(1_780_000_000.0)
    service, console = make_service(f"sqlite:///{tmp_path / 'h.db'}", clock, CONFIG)
    service.engine.resume()
    web = TestClient(create_app(service), base_url="http://localhost")
    try:
        run(service, clock, 1)
        ready = web.get("/readyz")
        assert ready.status_code == 503, ready.text
        assert any("never read" in r and "API key" in r for r in ready.json()["reasons"]), ready.json()
        run(service, clock, 5)
        assert fired(service)["source_unavailable"] == ("firing", "warning")
        assert "source_down" not in console.getvalue(), "the grace (10 minutes) is not over"
        run(service, clock, 6)
        assert fired(service)["source_down"] == ("firing", "critical"), fired(service)
        told = console.getvalue()
        assert "source_down" in told and "API key" in told, told[-2000:]
        page = web.get("/runs/pretrain-70b")  # where the alert's link lands
        assert page.status_code == 200, page.status_code
        assert "Watch pretrain-70b" in page.text and "never read" in page.text and "API key" in page.text
    finally:
        service.stop()
