"""The status API over what the engine wrote (FastAPI's TestClient, a real database)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from monitor.api.app import create_app
from tests.helpers import make_service, tick


def test_runs_and_alerts_show_the_stall(db_url, clock):
    service, _ = make_service(db_url, clock)
    service.engine.resume()
    tick(service, clock, 30 * 60)
    client = TestClient(create_app(service.sessions))
    assert client.get("/healthz").json()["status"] == "ok"
    runs = {r["id"]: r for r in client.get("/api/runs").json()}
    assert runs["hero-a"]["health"] == "critical" and runs["hero-a"]["active_alerts"] == {"critical": 1}
    assert runs["hero-b"]["health"] == "ok" and runs["hero-b"]["step"] > 100
    with service.sessions() as s:
        from monitor.storage.models import Run

        stats = s.get(Run, "hero-b").stats
    assert 0.07 < stats["steps_per_second"] < 0.09, "about one step per 12 s"
    assert 2 < stats["latest"]["train/loss"] < 11
    assert runs["hero-a"]["labels"]["team"] == "pretrain"
    firing = client.get("/api/alerts", params={"state": "firing"}).json()
    assert [(a["rule"], a["run"], a["severity"]) for a in firing] == [("progress_stalled", "hero-a", "critical")]
    assert "no new step" in firing[0]["summary"] and firing[0]["runbook_url"].startswith("https://")
    assert client.get("/api/alerts", params={"run": "hero-b"}).json() == []
    bad = client.get("/api/alerts", params={"state": "exploded"})
    assert bad.status_code == 422 and "state" in bad.text
    assert client.get("/openapi.json").json()["info"]["title"] == "herowatch"
    service.stop()
