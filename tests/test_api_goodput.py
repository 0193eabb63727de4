"""Goodput (ETTR) accounting: hand-made sample sequences, the simulated run's incidents, persistence."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.runs.goodput import BUCKETS, MAX_INCIDENTS, Goodput
from monitor.runs.goodput_report import attach_alerts, report_of
from monitor.runs.run_stats import RunStats
from monitor.sources.base import PollResult
from monitor.sources.sim import SimRun
from monitor.sources.sim_config import SimTarget
from tests.dashboard.support import build, client
from tests.helpers import tick

H = 3600.0


def steps(g: Goodput, t0: float, first: int, n: int, every: float = 10.0) -> float:
    """n steps from ``first`` every ``every`` seconds after t0; returns the time of the last."""
    t = t0
    for i in range(n):
        t = t0 + i * every
        g.observe(t, first + i, "running")
    return t


def total(r: dict) -> float:
    return r["productive_seconds"] + sum(r["lost_seconds"].values())


def test_a_steady_run_is_all_productive():
    g = Goodput()
    end = steps(g, 0.0, 1, 100)
    r = g.report(end)
    assert r["ratio"] == pytest.approx(1.0) and r["wall_seconds"] == pytest.approx(990.0)
    assert r["median_step_seconds"] == pytest.approx(10.0) and r["incidents"] == []


def test_short_pauses_are_overhead_long_ones_are_stalls_and_an_open_one_is_ongoing():
    g = Goodput()
    t = steps(g, 0.0, 1, 20)
    g.observe(t + 70, 21, "running")  # a checkpoint save: 60 s over the cadence
    t = steps(g, t + 80, 22, 10)
    g.observe(t + 2400, 32, "running")  # a 40-minute hang
    r = g.report(t + 2400)
    assert r["lost_seconds"]["paused"] == pytest.approx(60.0)
    assert r["lost_seconds"]["stalled"] == pytest.approx(2390.0)
    (stall,) = r["incidents"]
    assert stall["kind"] == "stall" and stall["step"] == 31 and stall["seconds_lost"] == pytest.approx(2390.0)
    assert stall["end"] == pytest.approx(t + 2400) and not stall["ongoing"]
    assert total(r) == pytest.approx(r["wall_seconds"])

    later = g.report(t + 2400 + 20 * 60)  # no step for 20 minutes now: an ongoing stall
    assert later["incidents"][-1]["ongoing"] and later["incidents"][-1]["end"] is None
    assert later["incidents"][-1]["seconds_lost"] == pytest.approx(20 * 60 - 10)
    assert later["incident_counts"] == {"stall": 2}
    assert total(later) == pytest.approx(later["wall_seconds"])
    assert g.report(t + 2400)["incident_counts"] == {"stall": 1}, "reporting changes nothing"


def test_a_rewind_is_a_restart_and_the_redone_steps_are_lost_work():
    g = Goodput()
    t = steps(g, 0.0, 1, 100)
    g.observe(t + 400, 61, "running", started=t + 5)  # resumed from the checkpoint at step 60
    end = steps(g, t + 410, 62, 50)
    r = g.report(end)
    (restart,) = r["incidents"]
    assert restart["kind"] == "restart" and restart["step"] == 61 and restart["steps_redone"] == 40
    assert r["steps_redone"] == 40
    assert r["lost_seconds"]["rework"] == pytest.approx(400.0), "40 steps at 10 s"
    assert r["lost_seconds"]["restarting"] == pytest.approx(5.0), "from the exit to the new process's start"
    assert r["lost_seconds"]["startup"] == pytest.approx(385.0), "from its start to its first step"
    assert restart["seconds_lost"] == pytest.approx(790.0)
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_crashed_then_running_is_downtime_then_a_restart():
    g = Goodput()
    t = steps(g, 0.0, 1, 50)  # step 50 at t
    g.observe(t + 30, None, "crashed")
    assert g.report(t + 300)["incidents"][-1] == {
        "kind": "down",
        "start": t,
        "end": None,
        "seconds_lost": 300.0,
        "step": 50,
        "steps_redone": 0,
        "ongoing": True,
    }
    g.observe(t + 600, None, "running")
    g.observe(t + 900, 41, "running")  # restored from step 40
    end = steps(g, t + 910, 42, 20)
    r = g.report(end)
    down, restart = r["incidents"]
    assert down["kind"] == "down" and down["seconds_lost"] == pytest.approx(600.0) and down["step"] == 50
    assert restart["kind"] == "restart" and restart["steps_redone"] == 10
    assert r["lost_seconds"]["down"] == pytest.approx(600.0)
    assert r["lost_seconds"]["restarting"] == pytest.approx(290.0)
    assert r["lost_seconds"]["rework"] == pytest.approx(100.0)
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_a_finished_run_stops_the_clock():
    g = Goodput()
    t = steps(g, 0.0, 1, 30)
    g.observe(t + 5, None, "finished")
    assert g.report(t + 10 * H)["wall_seconds"] == pytest.approx(t + 5)
    assert g.report(t + 10 * H)["state"] == "ended"


def test_a_slow_start_is_listed_and_the_incident_list_is_bounded():
    g = Goodput()
    g.observe(0.0, None, "running")
    g.observe(1200.0, 1, "running")
    (startup,) = g.report(1200.0)["incidents"]
    assert startup["kind"] == "startup" and startup["seconds_lost"] == 1200.0
    t = steps(g, 1210.0, 2, 10)
    for i in range(MAX_INCIDENTS + 10):  # many rewinds
        t = steps(g, t + 600, 5 + i, 10)
    r = g.report(t)
    assert len(r["incidents"]) == MAX_INCIDENTS and r["incident_counts"]["restart"] == MAX_INCIDENTS + 10


def test_the_state_survives_json_and_a_restart_of_herowatch():
    whole, first = Goodput(), Goodput()
    rows = [(i * 10.0, i, "running") for i in range(1, 60)] + [
        (900.0, 30, "running"),
        (2000.0, None, "crashed"),
        (2600.0, None, "running"),
    ]
    rows += [(2700.0 + i * 10, 25 + i, "running") for i in range(40)]
    for row in rows:
        whole.observe(*row)
    for row in rows[:70]:
        first.observe(*row)
    resumed = Goodput.from_dict(json.loads(json.dumps(first.to_dict())))
    for row in rows[70:]:
        resumed.observe(*row)
    a, b = whole.report(4000.0), resumed.report(4000.0)
    assert b["incident_counts"] == a["incident_counts"] == {"restart": 2, "down": 1, "stall": 2}, (
        "hung 900-2000, then down"
    )
    assert b["incidents"] == a["incidents"]
    assert b["wall_seconds"] == pytest.approx(a["wall_seconds"], abs=0.01)
    assert b["productive_seconds"] == pytest.approx(a["productive_seconds"], abs=0.05)
    assert Goodput.from_dict({"v": 99}).start is None, "an unknown format starts afresh"


def test_run_stats_carries_goodput_through_snapshot_and_restore():
    rs = RunStats(target_step=1000)
    for i in range(1, 50):
        rs.observe(i * 10.0, i, {"train/loss": 3.0}, state="running")
    snap = json.loads(json.dumps(rs.snapshot(500.0)))
    assert snap["goodput_ratio"] == pytest.approx(1.0) and snap["eta_seconds"] > 0
    again = RunStats.restore(snap, 1000)
    again.observe(3000.0, 50, {}, state="running")
    r = report_of(again.snapshot(3000.0), 3000.0)
    assert r["lost_seconds"]["stalled"] == pytest.approx(3000.0 - 490.0 - 10.0)
    assert report_of({}, 1.0) is None


def test_incidents_name_the_alerts_that_fired_during_them():
    incidents = [{"start": 100.0, "end": 200.0}, {"start": 300.0, "end": None}]
    attach_alerts(
        incidents, [("progress_stalled", 150.0, 260.0), ("loss_spike", 10.0, 20.0), ("x", 400.0, None)]
    )
    assert [i["alerts"] for i in incidents] == [["progress_stalled"], ["x"]]


def simulate(hours: float, **cfg) -> dict:
    """The sim's rows through a run's stats, as the engine hands them (the process's uptime too)."""
    sim = SimRun(SimTarget(**cfg), "r", origin=0.0)
    rs = RunStats()
    rs.observe(0.0, None, {}, state="running")
    t = 0.0
    while t < hours * H:
        t += 60.0
        for row in sim.advance(t):
            rs.observe(row.t, row.step, dict(row.metrics), state=row.state)
        rs.observe(t, None, {}, state=sim.state)  # the source's state sample, as every poll sends it
    return rs.goodput.report(t)


SIM = {"step_time": 10, "checkpoint_every": 100, "checkpoint_pause": 60, "restore_time": 300}


def test_the_simulated_runs_incidents_are_accounted_for():
    healthy = simulate(6, **SIM)
    assert 0.9 < healthy["ratio"] < 0.97, "checkpoint saves are the only overhead"
    lost = healthy["lost_seconds"]
    assert lost["checkpoint"] > 5 * lost["paused"] > 0 and healthy["incidents"] == [], (
        "the saves are booked as such once their cadence is learned (the first two before: other pauses)"
    )

    stalled = simulate(6, **SIM, incidents=[{"kind": "stall", "at": "1h", "duration": "40m"}])
    (stall,) = stalled["incidents"]
    assert stall["kind"] == "stall" and 39 * 60 < stall["seconds_lost"] < 41 * 60
    assert stalled["ratio"] == pytest.approx(healthy["ratio"] - 2400 / (6 * H), abs=0.02)

    restarted = simulate(6, **SIM, incidents=[{"kind": "restart", "at": "2h10m"}])
    (restart,) = restarted["incidents"]
    assert restart["kind"] == "restart" and restart["steps_redone"] > 0
    assert 300 < restarted["lost_seconds"]["startup"] < 300 + 10 + 70, (
        "restore, plus a step or a save in flight"
    )
    assert restarted["lost_seconds"]["restarting"] < 70, "the new process started when the old one was killed"
    assert restarted["lost_seconds"]["rework"] == pytest.approx(restart["steps_redone"] * 10, rel=0.05)

    crashed = simulate(6, **SIM, incidents=[{"kind": "crash", "at": "5h"}])
    down = crashed["incidents"][-1]
    assert down["kind"] == "down" and down["ongoing"] and 59 * 60 < down["seconds_lost"] < 61 * 60
    for r in (healthy, stalled, restarted, crashed):
        assert total(r) == pytest.approx(r["wall_seconds"]) == pytest.approx(6 * H)


events = st.lists(
    st.tuples(
        st.floats(0.0, 2000.0),
        st.one_of(st.none(), st.integers(0, 300)),
        st.sampled_from([None, "running", "running", "crashed", "finished", "killed"]),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(events, st.floats(0.0, 5000.0))
def test_the_buckets_always_add_up_to_the_wall_time(evs, extra):
    g = Goodput()
    t = 0.0
    for dt, step, state in evs:
        t += dt
        g.observe(t, step, state)
    r = g.report(t + extra)
    if not evs:
        assert r["wall_seconds"] == 0 and r["ratio"] is None
        return
    assert all(v >= -1e-6 for v in r["lost_seconds"].values()) and r["productive_seconds"] >= -1e-6
    assert total(r) == pytest.approx(r["wall_seconds"], abs=0.01)
    assert r["wall_seconds"] <= t + extra + 0.01
    assert r["ratio"] is None or -1e-9 <= r["ratio"] <= 1 + 1e-9
    assert set(r["lost_seconds"]) == set(BUCKETS[1:])
    restored = Goodput.from_dict(json.loads(json.dumps(g.to_dict()))).report(t + extra)
    assert restored["wall_seconds"] == pytest.approx(r["wall_seconds"], abs=0.01)


def test_a_source_outage_is_not_counted_as_the_run_pausing(db_url, clock):
    """While the run's own source fails, herowatch cannot see the run: its goodput is reported as of
    the last answer (not dragged down by the outage as if the run had paused), and once the backlog
    arrives with the run's own timestamps the run is as productive as it was."""
    service = build(db_url, clock)
    api = client(service)

    def healthy() -> dict:
        [run] = [r for r in api.get("/api/runs").json() if r["id"] == "sim:hero-b/hero-b"]
        return run["goodput"]

    tick(service, clock, 30 * 60, every=60)
    before = healthy()
    assert before["ratio"] > 0.95, before

    real = service.engine.sources["sim"]
    service.engine.sources["sim"] = type(
        "Down",
        (),
        {"kind": "sim", "close": lambda self: None, "poll": lambda self, *a: PollResult(error="HTTP 502")},
    )()
    tick(service, clock, 20 * 60, every=60)
    during = healthy()
    assert during["ratio"] == pytest.approx(before["ratio"], abs=0.01), (before, during)

    service.engine.sources["sim"] = real
    tick(service, clock, 5 * 60, every=60)
    after = healthy()
    assert after["ratio"] > 0.95, after
    service.stop()


def test_a_hang_ended_by_a_kill_and_restart_is_booked_hung_then_restarting_never_relabelled():
    """Steps every 10 s; a rank hangs after step 100 for 50 min; the job is killed and the new process
    (its uptime logged as ``_runtime``) resumes from step 61 after a 3-minute restore."""
    g = Goodput()
    t = steps(g, 0.0, 1, 100)
    shown = g.report(t + 50 * 60)  # what the run page said while the hang was on
    assert shown["lost_seconds"]["stalled"] == pytest.approx(50 * 60 - 10)
    kill, first = t + 50 * 60, t + 50 * 60 + 180 + 10
    g.observe(first, 61, "running", started=kill)
    r = g.report(first)
    assert r["lost_seconds"]["stalled"] >= shown["lost_seconds"]["stalled"], "the hang stays a hang"
    assert r["lost_seconds"]["stalled"] == pytest.approx(50 * 60 - 10)
    assert r["lost_seconds"]["restarting"] == pytest.approx(0.0), "the new process started at the kill"
    assert r["lost_seconds"]["startup"] == pytest.approx(180.0), "from its start to its first step"
    assert r["lost_seconds"]["rework"] == pytest.approx(400.0), "steps 61-100 redone"
    stall, restart = r["incidents"]
    assert (stall["kind"], stall["start"], stall["end"]) == ("stall", t, kill)
    assert (restart["kind"], restart["start"], restart["end"]) == ("restart", kill, first)
    assert restart["steps_redone"] == 40
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_a_hang_ended_by_a_reported_kill_is_hung_up_to_the_kill():
    g = Goodput()
    t = steps(g, 0.0, 1, 100)
    g.observe(t + 40 * 60, None, "killed")  # herowatch sees the job killed 40 min into the hang
    g.observe(t + 45 * 60, None, "running")
    g.observe(t + 50 * 60, 61, "running")
    r = g.report(t + 50 * 60)
    assert r["lost_seconds"]["stalled"] == pytest.approx(40 * 60 - 10)
    assert r["lost_seconds"]["down"] == pytest.approx(5 * 60)
    assert r["lost_seconds"]["restarting"] == pytest.approx(5 * 60 - 10)
    assert [i["kind"] for i in r["incidents"]] == ["stall", "down", "restart"]
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_a_restart_nothing_showed_leaves_the_hang_as_it_was_shown():
    g = Goodput()
    t = steps(g, 0.0, 1, 100)
    g.observe(t + 30 * 60, 61, "running")  # no state, no uptime: the restart itself was not seen
    r = g.report(t + 30 * 60)
    assert r["lost_seconds"]["stalled"] == pytest.approx(30 * 60 - 10)
    assert r["lost_seconds"]["restarting"] == 0.0 and r["lost_seconds"]["rework"] == pytest.approx(400.0)
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_the_simulated_hang_then_restart_is_booked_as_it_happened():
    """The demo's incident: a 50-minute hang, then the job is killed and restores in 5 minutes."""
    incidents = [{"kind": "stall", "at": "1h", "duration": "50m"}, {"kind": "restart", "at": "1h50m"}]
    during = simulate(1.75, **SIM, incidents=incidents)  # what the run page said while the hang was on
    r = simulate(3, **SIM, incidents=incidents)
    assert during["lost_seconds"]["stalled"] > 40 * 60 and during["lost_seconds"]["restarting"] < 20
    back = r["lost_seconds"]["restarting"] + r["lost_seconds"]["startup"]
    assert r["lost_seconds"]["stalled"] >= during["lost_seconds"]["stalled"]
    assert 49 * 60 < r["lost_seconds"]["stalled"] < 51 * 60
    assert 300 <= back - during["lost_seconds"]["restarting"] - during["lost_seconds"]["startup"] < 300 + 70
    assert [i["kind"] for i in r["incidents"]] == ["stall", "restart"]
    assert total(r) == pytest.approx(r["wall_seconds"]) == pytest.approx(3 * H)
    assert r["incidents"][0]["end"] == pytest.approx(r["incidents"][1]["start"]) == pytest.approx(110 * 60)
