"""Two goodput buckets that cut across the others: data loading (the part of a step interval its steps
waited for their batch, as the run logs it under its trainer's own name) and source blind (time herowatch
could not read the run's source and no step accounts for). Every second still lands in one bucket, in
the tracker and in the ledger the reports sum; state stored before these buckets existed reads them as 0."""

from __future__ import annotations

import json

import pytest

from monitor.profiles import translation
from monitor.runs.goodput import BUCKETS, Goodput
from monitor.runs.goodput_ledger import SLOT
from monitor.runs.run_stats import RunStats
from monitor.samples import Sample

M = 60.0


def total(r: dict) -> float:
    return r["productive_seconds"] + sum(r["lost_seconds"].values())


def ledger_seconds(g: Goodput) -> dict[str, float]:
    slots, _ = g.ledger.drain()
    out: dict[str, float] = {}
    for (_, bucket), sec in slots.items():
        out[bucket] = out.get(bucket, 0.0) + sec
    return out


def run(rs: RunStats, t: float, first: int, last: int, every: float, logs: dict | None = None) -> float:
    """Steps ``first``..``last`` ``every`` seconds apart, each row logging ``logs``; the last one's time."""
    for s in range(first, last + 1):
        rs.observe(t, s, {"train/loss": 2.0, **(logs or {})}, state="running")
        t += every
    return t - every


# ---- data loading --------------------------------------------------------------------------------
def test_seconds_a_step_waited_for_data_are_booked_as_data_loading():
    rs = RunStats()
    end = run(rs, 0.0, 1, 400, 10.0, {"throughput/loading_time": 2.5})
    r = rs.goodput.report(end)
    wall = r["wall_seconds"]
    assert r["lost_seconds"]["data_loading"] == pytest.approx(0.25 * wall, rel=0.01)
    assert r["productive_seconds"] == pytest.approx(0.75 * wall, rel=0.01)
    assert r["ratio"] == pytest.approx(0.75, abs=0.01)
    assert total(r) == pytest.approx(wall)
    assert ledger_seconds(rs.goodput)["data_loading"] == pytest.approx(r["lost_seconds"]["data_loading"])


def test_torchtitan_logs_it_every_few_steps_as_seconds_and_as_a_share_under_its_own_names():
    tt = translation("torchtitan")
    rs = RunStats()
    t = 0.0
    for s in range(10, 2001, 10):  # logged every 10 steps of 4 s, 1 s of each waiting for data
        raw = {
            "loss_metrics/global_avg_loss": 2.0,
            "time_metrics/end_to_end(s)": 4.0,
            "time_metrics/data_loading(s)": 1.0,
            "time_metrics/data_loading(%)": 25.0,
        }
        sample = tt.sample(Sample(t=t, run="r", step=s, metrics=raw, source="wandb"))
        rs.observe(sample.t, sample.step, dict(sample.metrics), state="running")
        t += 40.0
    r = rs.goodput.report(t - 40.0)
    assert r["lost_seconds"]["data_loading"] == pytest.approx(0.25 * r["wall_seconds"], rel=0.01)
    # the share alone (an older torchtitan, or a custom mapping) books the same
    share = RunStats()
    for i, s in enumerate(range(10, 2001, 10)):
        share.observe(i * 40.0, s, {"train/loss": 2.0, "throughput/loading_fraction": 0.25}, state="running")
    r2 = share.goodput.report(t - 40.0)
    assert r2["lost_seconds"]["data_loading"] == pytest.approx(r["lost_seconds"]["data_loading"], rel=0.01)


def test_megatron_and_levanter_names_map_to_the_data_wait():
    assert translation("megatron").metrics({"batch-generator-time": 0.5}) == {"throughput/loading_time": 0.5}
    assert translation("levanter").metrics({"throughput/loading_time": 0.5}) == {
        "throughput/loading_time": 0.5
    }
    frac = translation("torchtitan").metrics({"time_metrics/data_loading(%)": 12.0})
    assert frac == {"throughput/loading_fraction": pytest.approx(0.12)}


def test_data_loading_is_never_more_than_the_steps_time_and_never_eats_a_pause():
    rs = RunStats()
    end = run(rs, 0.0, 1, 100, 10.0, {"throughput/loading_time": 50.0})  # a nonsense value, 5x the step
    r = rs.goodput.report(end)
    assert r["lost_seconds"]["data_loading"] == pytest.approx(r["wall_seconds"]), "capped at the time"
    assert r["productive_seconds"] == pytest.approx(0.0)

    rs = RunStats()
    t = run(rs, 0.0, 1, 100, 10.0)
    rs.observe(t + 10.0 + 120.0, 101, {"throughput/loading_time": 300.0}, state="running")  # 2-minute pause
    r = rs.goodput.report(t + 130.0)
    assert r["lost_seconds"]["paused"] == pytest.approx(120.0), "the pause stays a pause"
    assert r["lost_seconds"]["data_loading"] == pytest.approx(10.0), "at most the step's own 10 s"
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_a_run_that_does_not_log_it_has_no_data_loading():
    rs = RunStats()
    end = run(rs, 0.0, 1, 300, 10.0, {"throughput/duration": 10.0})
    r = rs.goodput.report(end)
    assert r["lost_seconds"]["data_loading"] == 0.0 and r["ratio"] == pytest.approx(1.0)
    bad = RunStats()
    end = run(bad, 0.0, 1, 300, 10.0, {"throughput/loading_time": float("nan")})
    assert bad.goodput.report(end)["lost_seconds"]["data_loading"] == 0.0


# ---- source blind --------------------------------------------------------------------------------
def poll(rs: RunStats, now: float, answered_at: float) -> None:
    """What the engine does after each poll: ``answered_at`` is when the run's source last answered."""
    rs.snapshot(now, answered_at)


def healthy_then_outage(outage_from: float, outage_to: float) -> tuple[RunStats, float]:
    """Steps every 10 s up to ``outage_from``, polled every 60 s; the source fails until ``outage_to``."""
    rs = RunStats()
    t = run(rs, 0.0, 1, int(outage_from // 10), 10.0)
    for now in range(60, int(outage_from) + 1, 60):
        poll(rs, float(now), float(now))
    for now in range(int(outage_from) + 60, int(outage_to), 60):
        poll(rs, float(now), outage_from)
    return rs, t


def test_an_outage_is_shown_as_source_blind_while_it_lasts_not_as_a_hang():
    rs, _ = healthy_then_outage(3600.0, 3600.0 + 30 * M)
    r = rs.goodput.report(3600.0 + 30 * M - 60)
    lost = r["lost_seconds"]
    assert lost["source_blind"] == pytest.approx(29 * M, abs=M)
    assert lost["stalled"] == 0.0 and lost["paused"] <= 10.0, lost  # a step's worth before the last answer
    assert not [i for i in r["incidents"] if i.get("ongoing")], "no incident herowatch cannot see"
    assert r["ratio"] == pytest.approx(1.0, abs=0.01), "goodput is of the time herowatch could see"
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_steps_read_after_the_outage_are_booked_by_what_they_show():
    rs, t = healthy_then_outage(3600.0, 3600.0 + 30 * M)
    t = run(rs, t + 10.0, 361, 600, 10.0)  # the backlog, with its own timestamps: the run kept training
    poll(rs, 3600.0 + 30 * M + 60, 3600.0 + 30 * M + 60)
    r = rs.goodput.report(t)
    assert r["lost_seconds"]["source_blind"] == 0.0 and r["ratio"] == pytest.approx(1.0, abs=0.01)
    assert total(r) == pytest.approx(r["wall_seconds"])


def test_a_hang_through_an_outage_is_hung_where_herowatch_saw_it_and_blind_where_it_could_not():
    # the rank hangs at 3600 s; the source fails at 4200 s for 20 minutes; the run resumes at 7200 s
    rs = RunStats()
    t = run(rs, 0.0, 1, 360, 10.0)
    for now in range(60, 4201, 60):
        poll(rs, float(now), float(now))
    for now in range(4260, 4200 + 20 * 60, 60):
        poll(rs, float(now), 4200.0)
    for now in range(4200 + 20 * 60, 7201, 60):
        poll(rs, float(now), float(now))
    rs.observe(7200.0, 361, {"train/loss": 2.0}, state="running")
    end = run(rs, 7210.0, 362, 400, 10.0)
    r = rs.goodput.report(end)
    lost = r["lost_seconds"]
    assert lost["source_blind"] == pytest.approx(20 * M, abs=1)
    assert lost["stalled"] == pytest.approx(7200.0 - t - 10.0 - 20 * M, abs=1)
    (stall,) = [i for i in r["incidents"] if i["kind"] == "stall"]
    assert stall["seconds_lost"] == pytest.approx(lost["stalled"], abs=1)
    assert total(r) == pytest.approx(r["wall_seconds"])
    led = ledger_seconds(rs.goodput)  # what the reports sum: the same seconds, bucket by bucket
    assert led["productive"] == pytest.approx(r["productive_seconds"], abs=1e-3)
    for bucket, sec in lost.items():
        assert led.get(bucket, 0.0) == pytest.approx(sec, abs=1e-3), bucket
    assert set(lost) | {"productive"} == set(BUCKETS)


def test_the_ledger_lays_blind_time_where_it_was():
    g = Goodput()
    for s in range(1, 181):  # a step every 10 s up to 30:00, then the rank hangs
        g.observe(s * 10.0, s, "running")
    g.ledger.drain()
    g.blind(3 * SLOT)  # the source fails at 45:00 and answers again at 75:00
    g.sight(5 * SLOT)
    g.observe(7 * SLOT, 181, "running")  # the run goes on at 105:00
    slots, _ = g.ledger.drain()
    blind = {slot: sec for (slot, bucket), sec in slots.items() if bucket == "source_blind"}
    assert blind == {3 * SLOT: pytest.approx(SLOT), 4 * SLOT: pytest.approx(SLOT)}
    stalled = {slot: sec for (slot, bucket), sec in slots.items() if bucket == "stalled"}
    assert set(stalled) == {2 * SLOT, 5 * SLOT, 6 * SLOT}, "hung before and after the outage, where it was"
    assert sum(slots.values()) == pytest.approx(7 * SLOT - 1800.0)


def test_state_stored_before_data_loading_and_source_blind_loads_them_as_zero():
    rs = RunStats()
    end = run(rs, 0.0, 1, 100, 10.0)
    old = json.loads(json.dumps(rs.goodput.to_dict()))
    for k in ("data_loading", "source_blind"):
        del old["totals"][k]
    del old["unseen"]
    g = Goodput.from_dict(old)
    r = g.report(end)
    assert r["lost_seconds"]["data_loading"] == r["lost_seconds"]["source_blind"] == 0.0
    assert total(r) == pytest.approx(r["wall_seconds"])
    g.blind(end + 30.0)
    again = Goodput.from_dict(json.loads(json.dumps(g.to_dict())))
    blind = again.report(end + 20 * M)["lost_seconds"]["source_blind"]
    assert blind == pytest.approx(20 * M - 30.0 - 10.0), "all of it but the cadence's worth at its end"
