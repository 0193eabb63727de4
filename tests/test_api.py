"""The status API over what the engine wrote (FastAPI's TestClient, SQLite and the real PostgreSQL)."""

from __future__ import annotations

from monitor.storage.models import Run
from tests.dashboard.support import bearer, build, client
from tests.helpers import tick

SPIKY = """
watch:
  - name: spiky
    poll_interval: 60s
    target_step: 100000
    sim:
      seed: 9
      step_time: 10s
      checkpoint_every: 100
      checkpoint_pause: 30s
      restore_time: 300s
      incidents:
        - {kind: loss_spike, at: 1h, magnitude: 1.0}
        - {kind: restart, at: 2h10m}
"""


def test_runs_and_alerts_show_the_stall(db_url, clock):
    service = build(db_url, clock)
    tick(service, clock, 30 * 60, every=120)
    api = client(service)
    assert api.get("/healthz").json()["status"] == "ok"
    runs = {r["id"]: r for r in api.get("/api/runs").json()}
    a, b = runs["sim:hero-a/hero-a"], runs["sim:hero-b/hero-b"]
    assert a["health"] == "critical" and a["active_alerts"] == {"critical": 1}
    assert a["problem"].startswith("hero-a: no new step for"), a["problem"]
    assert a["steps_per_second"] == 0.0 and a["eta_seconds"] is None, "a stalled run makes no progress"
    assert a["goodput"]["lost_seconds"]["stalled"] > 15 * 60 and a["goodput"]["ratio"] < 0.5
    assert b["health"] == "ok" and b["problem"] == "Healthy" and b["step"] > 100
    assert 0.07 < b["steps_per_second"] < 0.09, "about one step per 12 s"
    assert 2 < b["loss"] < 11 and b["tokens_per_second"] > 1e5 and 30 < b["mfu"] < 60
    assert b["goodput"]["ratio"] > 0.95 and b["last_seen_at"].endswith("Z")
    with service.sessions() as s:
        assert s.get(Run, "sim:hero-b/hero-b").stats["goodput"]["v"] == 1, (
            "goodput is persisted in runs.stats"
        )
    assert a["labels"]["team"] == "pretrain"
    urgent = [r["id"] for r in api.get("/api/runs", params={"order": "urgency"}).json()]
    assert urgent == ["sim:hero-a/hero-a", "sim:hero-b/hero-b"]
    firing = api.get("/api/alerts", params={"state": "firing"}).json()
    assert [(x["rule"], x["run"], x["severity"]) for x in firing] == [
        ("progress_stalled", "sim:hero-a/hero-a", "critical")
    ]
    assert "no new step" in firing[0]["summary"] and firing[0]["runbook_url"] == "/runbooks#progress-stalled"
    assert firing[0]["silenced"] is False and firing[0]["acknowledged"] is False
    bad = api.get("/api/alerts", params={"state": "exploded"})
    assert bad.status_code == 422 and "state" in bad.json()["error"]
    spec = api.get("/openapi.json").json()
    assert spec["info"]["title"] == "herowatch"
    assert (
        spec["paths"]["/api/runs"]["get"]["summary"] and "runs" in spec["paths"]["/api/runs"]["get"]["tags"]
    )
    assert spec["paths"]["/api/silences"]["post"]["responses"]["201"]
    service.stop()


def test_alert_filters_ack_and_silence(db_url, clock):
    service = build(db_url, clock)
    tick(service, clock, 30 * 60, every=120)
    api = client(service)

    def ids(**params):
        return [x["id"] for x in api.get("/api/alerts", params=params).json()]

    (alert,) = api.get("/api/alerts", params={"state": "firing"}).json()
    aid = alert["id"]
    assert ids(state="active") == [aid] and ids(severity="warning") == [] and ids(run="hero-b") == []
    assert (
        ids(severity="critical", run="hero-a") == [aid] == ids(run="sim:hero-a/hero-a")
    )  # a display name or the id
    assert ids(acknowledged=False) == [aid] and ids(acknowledged=True) == []
    assert ids(silenced=True) == [] and aid in ids(silenced=False)

    acked = api.post(
        f"/api/alerts/{aid}/ack", json={"by": "alice", "comment": "looking at rank 17"}, headers=bearer()
    )
    assert (
        acked.status_code == 200
        and acked.json()["acked_by"] == "automation (alice)"
        and acked.json()["acked_at"]
    )
    assert ids(acknowledged=True) == [aid] and ids(acknowledged=False) == []
    story = api.get("/api/runs/hero-a").json()["timeline"]
    assert story[0]["reason"] == "acknowledged by automation (alice): looking at rank 17", (
        "the ack is in the run's timeline"
    )

    made = api.post(
        "/api/silences",
        json={
            "matchers": ["run=sim:hero-a/hero-a", "alertname=~progress_.*"],
            "duration": "2h",
            "created_by": "alice",
            "comment": "known hang",
        },
        headers=bearer(),
    )
    assert made.status_code == 201, made.text
    assert made.json()["state"] == "active" and made.json()["muting"] == 1
    assert ids(silenced=True) == [aid] and aid not in ids(silenced=False)
    muted = api.get("/api/alerts", params={"silenced": True}).json()[0]
    assert muted["silenced_by"] == made.json()["id"]
    run = {r["id"]: r for r in api.get("/api/runs").json()}["sim:hero-a/hero-a"]
    assert run["silenced_alerts"] == 1 and run["problem"].endswith("silenced")

    tick(service, clock, 20 * 60, every=120)  # the stall ends 40 minutes in: the alert resolves
    assert ids(state="resolved") == [aid] and ids(state="firing") == []
    assert ids(silenced=True) == [], "a resolved alert is not silenced"
    late = api.post(f"/api/alerts/{aid}/ack", json={"by": "bob"}, headers=bearer())
    assert late.status_code == 409 and "resolved" in late.json()["error"]
    missing = api.post("/api/alerts/99999/ack", json={"by": "bob"}, headers=bearer())
    assert missing.status_code == 404 and missing.json() == {"error": "no alert with id 99999"}
    service.stop()


def test_run_detail_keeps_a_one_step_spike_and_counts_the_restart(db_url, clock):
    service = build(db_url, clock, SPIKY)
    tick(service, clock, 3 * 3600, every=300)
    api = client(service)
    detail = api.get("/api/runs/spiky", params={"max_points": 64}).json()
    loss = detail["series"]["train/loss"]
    assert loss["axis"] == "step" and 16 <= len(loss["buckets"]) <= 64
    assert loss["buckets"][0]["x0"] == 0 and loss["buckets"][-1]["x1"] > 900
    ratios = sorted(b["max"] / b["mean"] for b in loss["buckets"] if b["count"] > 2)
    assert ratios[-1] > 1.5, "the one-step spike survives two rounds of downsampling as a bucket's max"
    assert ratios[-2] < 1.2, "and only that bucket has it"
    assert all(b["min"] <= b["mean"] <= b["max"] for b in loss["buckets"])
    assert {"throughput/tokens_per_second", "throughput/mfu"} <= set(detail["series"])
    assert detail["restarts"] == 1
    (restart,) = detail["restart_incidents"]
    assert restart["kind"] == "restart" and restart["steps_redone"] > 0 and restart["seconds_lost"] > 300
    assert detail["goodput"]["steps_redone"] == restart["steps_redone"]
    assert (
        detail["goodput"]["lost_seconds"]["rework"] > 0
        and detail["goodput"]["lost_seconds"]["startup"] >= 290
    ), "the restore: from the new process's start to its first step"
    assert detail["eta_seconds"] > 0 and detail["target_step"] == 100000
    only = api.get("/api/runs/spiky", params=[("metric", "train/loss"), ("metric", "nope")]).json()
    assert list(only["series"]) == ["train/loss"]
    for path in ("/api/runs/nope", "/api/runs/a/b"):
        r = api.get(path)
        assert r.status_code == 404 and r.json()["error"].startswith("no run with id")
    assert api.get("/api/nothing").json() == {"error": "nothing at /api/nothing"}
    service.stop()
