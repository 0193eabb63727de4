"""Issue 17's scenarios against the real Prometheus server (the world: tests/fleet/conftest.py): the alert
names the odd host or GPU, in the API and in the Slack message; a healthy fleet is said to be so."""

from __future__ import annotations

import json

from tests.fleet.conftest import CHANNEL, SCENARIOS, TICKS, World


def root_of(world: World, run: str):  # noqa: ANN201
    roots = [m for m in world.slack.roots(CHANNEL) if f"run {run}" in m.text]
    assert len(roots) == 1, [m.text for m in world.slack.roots(CHANNEL)]
    return roots[0]


def blocks_text(message) -> str:  # noqa: ANN001
    return json.dumps(message.blocks or [], ensure_ascii=False)


def test_a_stall_names_the_host_still_reading_from_the_network(world):
    """(a) Every GPU waits at a barrier; one rank is still restoring its checkpoint over the network."""
    (alert,) = world.alerts("run-a", "progress_stalled")
    assert alert["state"] == "firing"
    items = alert["hints"]["items"]
    assert {h["host"] for h in items} == {"a-node-17"}, items
    rx = next(h for h in items if h["metric"] == "net_rx")
    assert rx["member"] == "a-node-17" and rx["value"] > 1e9 and rx["median"] < 1e6
    assert rx["text"].startswith("a-node-17: network rx 1.") and "fleet median" in rx["text"]
    assert 60 <= alert["hints"]["window_seconds"] <= 600
    root = root_of(world, "run-a")
    assert "Stands out from the fleet" in blocks_text(root) and rx["text"] in blocks_text(root)
    assert "stands out: a-node-17: network rx" in root.text, "the notification's own text names the host"


def test_a_throttled_gpu_is_named_by_the_straggler_alert(world):
    """(b) One GPU throttles (HW thermal slowdown): its SM activity and the run's tokens/s drop a little."""
    (alert,) = world.alerts("run-b", "gpu_straggler")
    assert alert["state"] == "firing" and "b-node-42 GPU 3" in alert["summary"]
    items = alert["hints"]["items"]
    assert {h["member"] for h in items} == {"b-node-42 GPU 3"}, items
    sm = next(h for h in items if h["metric"] == "sm_active")
    assert sm["value"] < sm["median"] - 0.05 and sm["median"] > 0.95
    assert "b-node-42 GPU 3" in blocks_text(root_of(world, "run-b"))
    tps = world.api.get("/api/runs/run-b", params={"metric": "throughput/tokens_per_second"}).json()
    buckets = tps["series"]["throughput/tokens_per_second"]["buckets"]
    before = [b["mean"] for b in buckets if 5 <= b["x0"] < 20]  # steps 10 s apart: the drop comes at step ~23
    after = [b["mean"] for b in buckets if b["x0"] >= 30]
    ratio = (sum(after) / len(after)) / (sum(before) / len(before))
    assert 0.92 < ratio < 0.99, f"the run lost a few percent of its tokens/s ({ratio:.3f})"
    assert world.alerts("run-b", "throughput_drop") == [], "a few percent is no 10% drop"


def test_a_healthy_fleet_is_said_to_be_healthy(world):
    """(c) Every rank stalls alike: nothing stands out, and the hints say so rather than guess."""
    (alert,) = world.alerts("run-c", "progress_stalled")
    (item,) = alert["hints"]["items"]
    assert item["member"] is None
    assert item["text"].startswith("Nothing stands out: 704 GPUs on 88 hosts read like the fleet median")
    assert "Nothing stands out" in blocks_text(root_of(world, "run-c"))


def test_a_fleet_that_moves_together_has_no_straggler(world):
    for run in ("run-a", "run-c"):
        assert world.alerts(run, "gpu_straggler") == [], f"{run}: the whole fleet stopped, no one GPU did"


def test_the_fleet_api_returns_the_raster(world):
    got = world.api.get("/api/runs/run-b/fleet", params={"metric": "sm_active"})
    assert got.status_code == 200, got.text
    body = got.json()
    assert len(body["members"]) == 704 and len({m["host"] for m in body["members"]}) == 88
    assert body["members"][:2] == [
        {"host": "b-node-00", "device": "0", "name": "b-node-00 GPU 0"},
        {"host": "b-node-00", "device": "1", "name": "b-node-00 GPU 1"},
    ]
    assert body["unit"] == "ratio" and 0.84 < body["scale"][0] < 0.87 and 0.98 < body["scale"][1] <= 1.0
    assert {m["name"] for m in body["metrics"]} == {
        "sm_active", "gpu_temp", "gpu_slowdown", "net_rx", "net_tx", "disk_read", "disk_write",
    }  # fmt: skip
    assert body["starts"][0] == world.t0 and TICKS - 2 <= len(body["starts"]) <= TICKS, "a column per tick"
    odd = next(i for i, m in enumerate(body["members"]) if m["name"] == "b-node-42 GPU 3")
    assert body["mean"][odd][-1] < 0.9 and body["mean"][odd][SCENARIOS["b"].onset - 2] > 0.95
    last = sorted(row[-1] for row in body["mean"])
    assert last[0] < 0.9 and 0.92 < last[1] < last[-1] < 1.0, "one row odd; rank 0's GPU a little lower"
    recent = world.api.get(
        "/api/runs/run-b/fleet", params={"metric": "sm_active", "since": "2m", "stats": "max"}
    )
    assert len(recent.json()["starts"]) <= 10 and recent.json()["mean"] is None and recent.json()["max"]
    rx = world.api.get("/api/runs/run-a/fleet", params={"metric": "net_rx"}).json()
    assert 1.7e9 < sorted(r[10] for r in rx["mean"])[44] < 2.1e9, (
        "lo's 5 GB/s is left out of a host's network"
    )
    missing = world.api.get("/api/runs/run-b/fleet", params={"metric": "power"})
    assert missing.status_code == 404 and "sm_active" in missing.json()["error"]
    assert world.api.get("/api/runs/nope/fleet").status_code == 404
    assert "/api/runs/{run_id}/fleet" in world.api.get("/openapi.json").json()["paths"]


def test_polling_the_fleet_keeps_to_its_interval(world):
    """Three runs of 704 GPUs and 88 hosts, 7 fleet metrics each, read and stored a minute at a time."""
    assert max(world.poll_seconds) < 20, world.poll_seconds
