"""The demo keeps teaching: its pretraining run loops through six incidents and its RL run through a
reward collapse, each of which pages, can be acted on for a while and resolves within the loop, and the
loop comes round again; the healthy run never pages. The demo's own config on a manual clock (25
simulated hours in under a minute)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from sqlalchemy import select

from alerts.clock import ManualClock
from monitor.cli.demo_text import intro
from monitor.config.loader import parse_config
from monitor.storage.models import Alert, AlertTransition
from tests.helpers import make_service, sim_id, tick

DEMO = resources.files("monitor.config").joinpath("demo.yaml").read_text(encoding="utf-8")
T0 = 1_780_000_000.0
LOOP = 5 * 3600
LOOPS = 5
# incident -> the alert that teaches it (all severities a newcomer should see act and resolve)
TAUGHT = {
    "stall": "progress_stalled",
    "loss_spike": "loss_spike",
    "nan": "loss_nonfinite",
    "oom_kill": "oom_kills",
    "throughput_drop": "throughput_drop",
    "outage": "source_unavailable",
}
RL_TAUGHT = ("rl_reward_collapse", "rl_kl_blowup", "rl_entropy_collapse")  # what the policy collapse pages


def test_every_incident_of_the_loop_fires_then_resolves_and_the_loop_repeats(tmp_path: Path):
    clock = ManualClock(T0)
    service, _ = make_service(f"sqlite:///{tmp_path / 'demo.db'}", clock, DEMO, keep_notifiers=True)
    service.engine.resume()
    try:
        tick(service, clock, LOOPS * LOOP + 600, 60)
        with service.sessions() as s:
            rows = s.execute(
                select(AlertTransition, Alert).join(Alert, Alert.id == AlertTransition.alert_id)
            ).all()
    finally:
        service.stop()
    # the run's alerts, and the outage's (about the watch: its run label is the watch's name)
    raised = {a.run_id for _, a in rows}
    rl = sim_id("rl-demo-grpo", "qwen-7b-grpo")
    assert raised == {sim_id("hero-demo-7b"), "hero-demo-7b", rl}, "the healthy run never raised anything"
    assert {a.rule for _, a in rows if a.run_id == rl} == set(RL_TAUGHT), "the RL run pages its collapse only"
    cfg = parse_config(DEMO, "demo.yaml")
    incidents = {i.kind: i for w in cfg.watch for i in w.sim.incidents}
    taught = [*TAUGHT.items(), *(("reward_collapse", rule) for rule in RL_TAUGHT)]
    for kind, rule in taught:
        for loop in range(LOOPS):  # every loop: a recurring hang is never learned as a habit
            start = T0 + loop * LOOP + incidents[kind].at
            fired = [t.at for t, a in rows if a.rule == rule and t.to_state == "firing" and t.at >= start]
            # a policy collapse within 5 RL steps or 10 minutes, whichever is longer (issue 39)
            within = 10 if rule in RL_TAUGHT else 25
            assert fired and fired[0] - start < within * 60, (
                f"{rule} fires within {within}m of the {kind} (loop {loop})"
            )
            resolved = [t for t, a in rows if a.rule == rule and t.to_state == "resolved" and t.at > fired[0]]
            assert resolved, f"{rule} resolves (loop {loop})"
            lasted = resolved[0].at - fired[0]
            # long enough to act on; no longer than the incident and a rule's keep_firing_for (30m)
            assert 15 * 60 <= lasted <= (incidents[kind].duration or 15 * 60) + 30 * 60, (
                f"{rule} stays firing long enough to act on, and resolves: {lasted / 60:.0f}m"
            )
            assert resolved[0].at < T0 + (loop + 1) * LOOP, f"{rule} resolves before the loop comes round"
            if rule == "loss_spike":  # held by the detector, not the clock: a floor window (5m) after the
                # loss is back, plus a poll, never half an hour of "firing" on a healthy loss
                back = start + (incidents[kind].duration or 0)
                late = resolved[0].at - back
                assert 0 <= late <= 7 * 60, f"loss_spike resolves {late:.0f}s after the loss is back"
    # the outage (30m) outlasts the grace (10m): it escalates once per loop, source_down, critical, and
    # ends with its warning, at the same time (one outage, one incident)
    outage_at = incidents["outage"].at
    for loop in range(LOOPS):
        start, end = T0 + loop * LOOP + outage_at, T0 + (loop + 1) * LOOP
        seen = {
            (a.rule, t.to_state): t.at
            for t, a in rows
            if a.rule in ("source_unavailable", "source_down") and start <= t.at < end
        }
        assert 10 * 60 <= seen[("source_down", "firing")] - start < 13 * 60, (loop, seen)
        assert seen[("source_down", "resolved")] == seen[("source_unavailable", "resolved")], (loop, seen)
    pages = {a.rule for t, a in rows if t.to_state == "firing" and a.severity in ("critical", "warning")}
    # the throughput drop's other rule (one symptom, one page); the outage's escalation
    same_symptom = {"throughput_slowdown", "source_down"}
    assert pages <= {*TAUGHT.values(), *RL_TAUGHT, *same_symptom}, (
        f"nothing pages but what the loop teaches: {pages}"
    )
    reasons = [t.reason for t, a in rows if t.to_state == "resolved"]
    assert not [r for r in reasons if "sigma below" in r], "a resolution never reads like an alarm"
    assert any(r.startswith("last step ") and "within the limit 15m" in r for r in reasons)


def test_the_demo_explains_its_clock_and_its_schedule():
    text = intro(
        parse_config(DEMO, "demo.yaml"), 30.0, "http://127.0.0.1:8080", "log in with the one-time token tok"
    )
    flat = " ".join(text.split())
    assert "on a clock 30x faster than real time" in flat
    assert (
        "(a 2h silence lasts 4m of real time)" in flat
        and "One loop of incidents takes 10m of real time" in flat
    )
    assert (
        "hero-demo-7b (every 5h, at h:mm into each loop): stall 0:05, restart 0:55, loss spike 1:05, "
        "NaN loss 1:55, "
        "OOM kill + restart 2:30, throughput drop 3:15, source outage 4:15" in flat
    )
    assert "hero-demo-healthy: stays healthy" in flat and "one-time token tok" in flat
    assert "qwen-7b-grpo (every 5h, at h:mm into each loop): reward collapse 1:20" in flat
