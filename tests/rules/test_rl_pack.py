"""The rl pack on generated RL runs of every scale and cadence (tests/rules/rl_curves.py): healthy runs
stay quiet, each incident fires its rule and only after it starts; the same through the key names TRL
and verl really log (the metric profiles map them in replay, as in the engine)."""

from __future__ import annotations

import pytest

from monitor.rules.loader import load_pack
from monitor.traces.replay import replay
from tests.rules import rl_curves as rc

HOURS = 8 * 3600.0


def steps_for(seed: int, hours: float = HOURS) -> int:
    shape = rc.Shape.draw(__import__("random").Random(seed))
    return int(hours / shape.step_seconds)


def fired(samples, pack: str = "rl") -> dict[str, float]:
    """rule -> time (from the start) it first fired."""
    out: dict[str, float] = {}
    for e in replay(samples, load_pack(pack)).firing():
        out.setdefault(e.rule, e.t - rc.T0)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_a_healthy_rl_run_never_alerts(seed: int) -> None:
    samples = rc.run(seed, steps_for(seed))
    assert fired(samples) == {}, rc.Shape.draw(__import__("random").Random(seed))


POLICY_COLLAPSE = None  # within 5 RL steps or 10 minutes of the onset, whichever is longer (issue 39)
INCIDENTS = [
    (rc.collapse, "rl_reward_collapse", POLICY_COLLAPSE),
    (rc.kl_blowup, "rl_kl_blowup", POLICY_COLLAPSE),
    (rc.entropy_collapse, "rl_entropy_collapse", POLICY_COLLAPSE),
    (rc.flat, "rl_reward_flatline", 40 * 60),
    (rc.truncation, "rl_responses_truncated", 25 * 60),
    (rc.slow_rollouts, "rl_rollout_throughput_drop", 45 * 60),
    (rc.nan_reward, "rl_reward_nonfinite", 10 * 60),
]


@pytest.mark.parametrize("change, rule, within", INCIDENTS, ids=[i[1] for i in INCIDENTS])
@pytest.mark.parametrize("seed", range(8))
def test_each_incident_fires_its_rule_after_it_starts(
    change, rule: str, within: float | None, seed: int
) -> None:
    n = steps_for(seed, 6 * 3600)
    start = n * 2 // 3  # four hours of healthy training first
    shape = rc.Shape.draw(__import__("random").Random(seed))
    at = start * shape.step_seconds
    got = fired(rc.run(seed, n, rc.from_step(start, change)))
    assert rule in got, (got, shape)
    if within is None:  # a policy collapse: counted in the run's own steps, no grace of two more
        budget = max(5 * shape.step_seconds, 10 * 60)
    else:
        budget = within + 2 * shape.step_seconds
    assert at <= got[rule] <= at + budget, (got[rule] - at, shape)
    early = {r: t for r, t in got.items() if t < at}
    assert early == {}, early


@pytest.mark.parametrize("keys", [rc.TRL_KEYS, rc.VERL_KEYS], ids=["trl", "verl"])
def test_the_trainers_own_key_names_get_the_same_alerts(keys: dict[str, str]) -> None:
    n = steps_for(3, 6 * 3600)
    incident = rc.from_step(n * 2 // 3, rc.kl_blowup)
    canonical = {e.rule for e in replay(rc.run(3, n, incident), load_pack("rl")).firing()}
    named = {e.rule for e in replay(rc.run(3, n, incident, keys=keys), load_pack("rl")).firing()}
    assert "rl_kl_blowup" in canonical and named == canonical
