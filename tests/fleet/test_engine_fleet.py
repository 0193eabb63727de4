"""The fleet in the engine cycle (``engine.fleet.FleetStep``) on a real database: frames stored, the
straggler rule's drift fed as samples and rebuilt from the stored raster after a restart, hints computed
for an alert as it fires."""

from __future__ import annotations

import random

from alerts.lifecycle import AlertStatus, Transition
from alerts.model import AlertState, Finding
from monitor.config.schema import Watch
from monitor.engine.evaluator import AlertEvent, AlertKey
from monitor.engine.fleet import FleetStep
from monitor.fleet.frame import FleetFrame
from monitor.rules.loader import load_pack
from monitor.rules.straggler import StragglerSpec

T0 = 118_666_666 * 15.0
MEMBERS = tuple((f"node-{h:02d}", str(g)) for h in range(16) for g in range(8))  # 128 GPUs
RULE = StragglerSpec(name="gpu_straggler", window=120.0, baseline=600.0)
WATCH = Watch(name="w", prometheus={"url": "http://p:9090", "runs": ["r"], "fleet": {}})


def frame(k0: int, n: int, slow_from: int | None = None) -> FleetFrame:
    rng = random.Random(k0)
    times = tuple(T0 + 15.0 * k for k in range(k0, k0 + n))
    rows = tuple(
        tuple(
            0.97
            + rng.gauss(0, 0.004)
            - (0.12 if slow_from is not None and k >= slow_from and m == ("node-09", "5") else 0)
            for k in range(k0, k0 + n)
        )
        for m in MEMBERS
    )
    return FleetFrame("r", "sm_active", "SM active", "ratio", "GPU", 15.0, MEMBERS, times, rows)


def test_the_drift_survives_a_restart_through_the_stored_raster(fleet_db):
    step = FleetStep(lambda run: [RULE])
    for k0 in range(0, 60, 4):  # 15 minutes, a poll a minute; node-09 GPU 5 slows down at minute 12
        with fleet_db.begin() as s:
            samples = step.ingest(s, WATCH, "r", [frame(k0, 4, slow_from=48)])
    assert [round(x.t) for x in samples] == [round(T0 + 15 * k) for k in range(56, 60)]
    last = samples[-1]
    assert last.metrics["fleet/gpu_straggler"] > 6 and last.labels["member"] == "node-09 GPU 5"
    assert last.labels["value"] == "0.85" and last.labels["median"] == "0.97"

    restarted = FleetStep(lambda run: [RULE])  # a new process: no track in memory
    with fleet_db.begin() as s:
        (first,) = restarted.ingest(s, WATCH, "r", [frame(60, 1, slow_from=48)])
    assert first.metrics["fleet/gpu_straggler"] > 6, "rebuilt from the raster, not warming up for 10 minutes"
    assert first.labels["member"] == "node-09 GPU 5"


def test_hints_are_computed_when_a_hinted_alert_fires(fleet_db):
    step = FleetStep(lambda run: [])
    with fleet_db.begin() as s:
        step.ingest(s, WATCH, "r", [frame(0, 40, slow_from=20)])
    stall = next(r for r in load_pack("hero") if r.kind == "stall")
    tr = Transition(AlertState.PENDING, AlertState.FIRING, T0 + 600, "held")
    event = AlertEvent(
        AlertKey(stall, "r", {"run": "r"}, "fp"),
        tr,
        AlertStatus(AlertState.FIRING, T0, T0 + 600),
        Finding(True, value=300.0),
        {},
    )
    with fleet_db() as s:
        hints = step.hints(s, event, T0 + 585)
        assert hints["window"] == [T0 + 435, T0 + 585]
        (item,) = hints["items"]
        assert item["member"] == "node-09 GPU 5" and item["metric"] == "sm_active"
        not_hinted = next(r for r in load_pack("hero") if r.kind == "spike")
        assert (
            step.hints(s, AlertEvent(AlertKey(not_hinted, "r", {}, "f"), tr, None, Finding(True), {}), T0)
            is None
        )
