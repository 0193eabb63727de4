"""The simulated hero run (monitor/sources/sim.py) through the hero pack: healthy hours raise nothing
above info; each injected incident raises the right alert, and only that above info."""

from __future__ import annotations

import pytest

from monitor.traces.replay import replay
from tests.rules.helpers_rules import T0, above_info, hero, sim_samples


def pages(result) -> set[str]:
    return {e.rule for e in result.events if e.state == "firing" and e.severity != "info"}


@pytest.mark.parametrize("seed", [0, 7])
def test_a_healthy_run_of_several_hours_raises_nothing_above_info(seed):
    result = replay(sim_samples(hours=8, seed=seed), hero())
    assert above_info(result) == []
    assert result.summaries["sim-1"].last_step > 2500


@pytest.mark.parametrize(
    "incidents, expected, severity",
    [
        ([{"kind": "stall", "at": "2h", "duration": "40m"}], "progress_stalled", "critical"),
        ([{"kind": "nan", "at": "2h"}], "loss_nonfinite", "critical"),
        ([{"kind": "restart", "at": t} for t in ("2h", "2h10m", "2h20m", "2h30m")], "crash_loop", "critical"),
        ([{"kind": "throughput_drop", "at": "2h", "factor": 0.8}], "throughput_drop", "warning"),
        ([{"kind": "oom_kill", "at": "2h"}, {"kind": "oom_kill", "at": "3h"}], "oom_kills", "warning"),
        ([{"kind": "crash", "at": "2h"}], "run_crashed", "critical"),
        ([{"kind": "loss_spike", "at": "2h", "duration": "20m", "magnitude": 0.3}], "loss_spike", "critical"),
    ],
    ids=["stall", "nan", "restart-loop", "throughput-drop", "oom-kills", "crash", "loss-spike-that-stays"],
)
def test_each_incident_raises_the_right_alert(incidents, expected, severity):
    result = replay(sim_samples(incidents, hours=4), hero())
    # a 20% throughput drop is also a sustained slowdown of the steps (the CUSUM rule, issue 13)
    also = {"throughput_slowdown"} if expected == "throughput_drop" else set()
    assert pages(result) == {expected} | also
    first = next(e for e in result.firing() if e.rule == expected)
    assert first.severity == severity
    assert first.t >= T0 + 2 * 3600  # not before the incident


def test_when_each_incident_is_caught():
    stall = replay(sim_samples([{"kind": "stall", "at": "2h", "duration": "40m"}], hours=4), hero())
    (fired,) = [e for e in stall.firing() if e.rule == "progress_stalled"]
    assert T0 + 2 * 3600 + 900 <= fired.t <= T0 + 2 * 3600 + 900 + 60  # 15 minutes after the last step
    nan = replay(sim_samples([{"kind": "nan", "at": "2h"}], hours=3), hero())
    (fired,) = [e for e in nan.firing() if e.rule == "loss_nonfinite"]
    assert fired.t <= T0 + 2 * 3600 + 20  # at the first step at or after the incident


def test_a_one_step_loss_blip_is_recorded_never_paged():
    result = replay(sim_samples([{"kind": "loss_spike", "at": "2h"}], hours=4), hero())
    assert pages(result) == set()
    assert {e.rule for e in result.firing()} == {"loss_jump", "grad_norm_spike"}
    assert result.summaries["sim-1"].stats["loss_jump"]["spikes"] == 1
