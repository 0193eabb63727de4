"""The pure fleet logic: robust scores, culprit hints, straggler drift (on synthetic fleets and on the real
per-worker batch times of a PAI job, /work/shared/data/real/pai_job_1_minibatch_norm.csv)."""

from __future__ import annotations

import csv
import math
import random
from collections import defaultdict

import pytest

from monitor.fleet.frame import FleetFrame, clean_frame, host_name, member_name, natural_key
from monitor.fleet.hints import MetricWindow, fleet_hints, window_for
from monitor.fleet.score import odd_ones
from monitor.fleet.straggler import StragglerTrack
from monitor.fleet.units import fmt
from tests.conftest import REAL_DATA

GPUS = [(f"node-{h:02d}", str(g)) for h in range(88) for g in range(8)]
HOSTS = [(f"node-{h:02d}", None) for h in range(88)]


def sm(rng: random.Random, odd: dict[tuple[str, str | None], float] | None = None) -> list[float]:
    return [(odd or {}).get(m, 0.97 + rng.gauss(0, 0.004)) for m in GPUS]


def test_one_gpu_far_from_the_fleet_is_odd_and_noise_is_not():
    rng = random.Random(1)
    _, none = odd_ones(sm(rng), level=0.97, least=0.01)
    assert none == []
    sp, odd = odd_ones(sm(rng, {("node-17", "3"): 0.02}), level=0.97, least=0.01)
    assert [GPUS[i] for i, _ in odd] == [("node-17", "3")]
    assert odd[0][1] < -50 and sp.median == pytest.approx(0.97, abs=0.002)


def test_a_fleet_reading_exactly_zero_does_not_make_noise_a_culprit():
    """Every host writes nothing but one writes 4 kB/s of logs: the MAD is 0, the unit's resolution
    (1 MB/s) keeps the score small."""
    values = [0.0] * 87 + [4e3]
    assert odd_ones(values, level=0.0, least=1e6)[1] == []
    values[-1] = 1.5e9  # a host reading a checkpoint: that is odd
    assert [i for i, _ in odd_ones(values, level=0.0, least=1e6)[1]] == [87]


def test_a_split_fleet_names_nobody():
    """One pipeline stage in eight reads differently: structure, not a culprit."""
    values = [0.97 if i % 8 else 0.80 for i in range(704)]
    assert odd_ones(values, level=0.97, least=0.01)[1] == []


def test_hints_name_the_host_and_its_gpu_with_values_and_the_fleet_median():
    rng = random.Random(2)
    gpus = sm(rng, {("node-17", "3"): 0.02})
    rx = [1.9e9 * (1 + rng.gauss(0, 0.03)) for _ in HOSTS]
    rx[17] = 0.0
    temp = [65 + rng.gauss(0, 2) for _ in GPUS]
    windows = [
        MetricWindow("sm_active", "SM active", "ratio", "GPU", GPUS, gpus, 0.97),
        MetricWindow("net_rx", "network rx", "bytes_per_second", None, HOSTS, rx, 1.9e9),
        MetricWindow("gpu_temp", "GPU temperature", "celsius", "GPU", GPUS, temp, 65.0),
    ]
    hints = fleet_hints(windows, 1000.0, 1900.0)
    texts = [h["text"] for h in hints["items"]]
    assert texts == [
        "node-17 GPU 3: SM active 0.02, fleet median 0.97",
        "node-17: network rx 0 B/s, fleet median 1.9 GB/s",
    ]
    assert hints["window"] == [1000.0, 1900.0]
    assert hints["items"][0]["host"] == "node-17" and hints["items"][0]["device"] == "3"


def test_when_nothing_stands_out_the_hints_say_so():
    rng = random.Random(3)
    windows = [MetricWindow("sm_active", "SM active", "ratio", "GPU", GPUS, sm(rng), 0.97)]
    (item,) = fleet_hints(windows, 0.0, 1200.0)["items"]
    assert item["member"] is None
    assert item["text"] == (
        "Nothing stands out: 704 GPUs on 88 hosts read like the fleet median on 1 fleet metric "
        "over the last 20m"
    )
    no_data = [MetricWindow("sm_active", "SM active", "ratio", "GPU", GPUS, [math.nan] * 704, 0.97)]
    assert fleet_hints(no_data, 0.0, 1200.0) is None


def test_the_window_is_the_later_half_of_a_stall_or_the_rule_window_and_its_for():
    class Rule:
        window, for_ = 600.0, 900.0

    assert window_for("stall", 1800.0, Rule(), 10_000.0, 3600.0) == (9100.0, 10_000.0)
    assert window_for("drop", None, Rule(), 10_000.0, 3600.0) == (8500.0, 10_000.0)
    assert window_for("stall", 8 * 3600.0, Rule(), 10_000.0, 3600.0) == (6400.0, 10_000.0)  # the fine tier


def test_names_and_units_read_well():
    assert host_name("node-17:9100") == "node-17" and host_name("10.0.0.7:9100") == "10.0.0.7"
    assert (
        member_name(("node-17", "3"), "GPU") == "node-17 GPU 3"
        and member_name(("node-17", None), None) == "node-17"
    )
    assert sorted([("n-10", "1"), ("n-2", "10"), ("n-2", "2")], key=natural_key) == [
        ("n-2", "2"),
        ("n-2", "10"),
        ("n-10", "1"),
    ]
    assert [
        fmt(v, u) for v, u in [(0.973, "ratio"), (71.4, "celsius"), (1.93e9, "bytes_per_second"), (None, "")]
    ] == [
        "0.97",
        "71 °C",
        "1.93 GB/s",
        "—",
    ]


def test_frames_are_checked_where_they_enter():
    good = FleetFrame(
        "r", "sm_active", "SM active", "ratio", "GPU", 15.0, (("n", "0"),), (1.0, 2.0), ((0.5, "x"),)
    )
    cleaned = clean_frame(good)
    assert cleaned is not None and cleaned.values[0][0] == 0.5 and math.isnan(cleaned.values[0][1])
    assert (
        clean_frame(FleetFrame("r", "m", "m", "", None, 15.0, (("n", None),), (2.0, 1.0), ((1.0, 2.0),)))
        is None
    )
    assert clean_frame(FleetFrame("", "m", "m", "", None, 15.0, (("n", None),), (1.0,), ((1.0,),))) is None
    assert clean_frame("not a frame") is None


# ---- stragglers --------------------------------------------------------------------------------------
def run_track(track: StragglerTrack, columns: int, value) -> list:  # noqa: ANN001
    rng = random.Random(4)
    return [track.add(k * 15.0, GPUS, [value(k, m, rng) for m in GPUS]) for k in range(columns)]


def test_a_gpu_that_starts_throttling_drifts_stays_a_straggler_and_comes_back():
    def value(k, m, rng):  # noqa: ANN001, ANN202
        base = 0.97 - (0.05 if m == ("node-00", "0") else 0.0)  # rank 0 always reads lower: its normal
        return base - (0.11 if 300 <= k < 600 and m == ("node-42", "3") else 0.0) + rng.gauss(0, 0.004)

    track = StragglerTrack(600, 3600, 15.0, "either", 6.0, device_word="GPU", least=0.01)
    out = run_track(track, 800, value)
    assert max(d.score for d in out[:300]) < 1.0, "rank 0's lower normal is no drift"
    assert out[330].member == "node-42 GPU 3" and out[330].score > 6  # three quarters into the window
    assert all(d.score > 6 for d in out[340:600]), "a GPU that stays slow stays a straggler"
    assert out[340].value == pytest.approx(0.86, abs=0.01) and out[340].median == pytest.approx(
        0.97, abs=0.01
    )
    assert max(d.score for d in out[660:]) < 1.0, "back in line: its normal did not learn the slowdown"


def test_the_whole_fleet_moving_together_is_no_straggler():
    def value(k, m, rng):  # noqa: ANN001, ANN202
        return (0.01 if k >= 300 else 0.97) + rng.gauss(0, 0.004)  # everybody waits at a barrier

    out = run_track(StragglerTrack(600, 3600, 15.0, "either", 6.0, least=0.01), 500, value)
    assert max(d.score for d in out) < 6


def test_the_real_pai_straggler_is_found_and_nothing_else():
    """PAI job 1: worker 6 runs ~2x slower around iterations 1830-1930 (the public trace); workers 0-2
    are always ~8% slower than the rest, which is their normal."""
    by_time: dict[int, dict[int, float]] = defaultdict(dict)
    with open(REAL_DATA / "pai_job_1_minibatch_norm.csv") as f:
        for row in csv.DictReader(f):
            by_time[int(row["time"])][int(row["worker"])] = float(row["batch_time_norm"])
    workers = [(f"worker-{w}", None) for w in range(10)]
    track = StragglerTrack(window=100, baseline=500, step=10, direction="above", z=6.0)
    out = [
        track.add(float(t), workers, [v.get(w, math.nan) for w in range(10)])
        for t, v in sorted(by_time.items())
    ]
    flagged = [d for d in out if d.score >= 6]
    assert flagged and {d.member for d in flagged} == {"worker-6"}
    assert 1800 <= min(d.t for d in flagged) and max(d.t for d in flagged) <= 1950
