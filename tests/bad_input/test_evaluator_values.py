"""Odd metric values and odd rows through the Evaluator with the hero pack: a non-finite loss fires
``loss_nonfinite``, a huge but finite one does not, a non-finite counter does not raise, and random odd
rows (hypothesis) never make it raise."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from alerts.model import AlertState
from monitor.engine.evaluator import Evaluator
from monitor.rules.loader import load_pack
from monitor.samples import Sample
from tests.bad_input.odd_values import HERO_METRICS, ODD


@pytest.fixture(scope="module")
def hero():
    return load_pack("hero")


def firing(ev: Evaluator, run: str) -> set[str]:
    return {key.rule.name for key, status in ev.alerts(run) if status.state == AlertState.FIRING}


def healthy(run: str, t0: float, n: int, step0: int = 0, dt: float = 10.0) -> list[Sample]:
    return [
        Sample(
            t0 + i * dt,
            run,
            step0 + i,
            {"train/loss": 3.0 - i * 1e-4, "throughput/tokens_per_second": 400_000.0},
            state="running",
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_evaluator_fires_loss_nonfinite_on_a_non_finite_loss(hero, bad):
    ev = Evaluator(lambda run: hero)
    t0 = 1_780_000_000.0
    for s in healthy("r", t0, 60):
        ev.observe(s)
    ev.evaluate("r", t0 + 600)
    assert "loss_nonfinite" not in firing(ev, "r")
    ev.observe(Sample(t0 + 600, "r", 60, {"train/loss": bad}, state="running"))
    events = ev.evaluate("r", t0 + 600)
    assert "loss_nonfinite" in firing(ev, "r"), events
    assert any(
        e.key.rule.name == "loss_nonfinite" and e.transition.to_state == AlertState.FIRING for e in events
    )


@pytest.mark.parametrize("metric", ["restarts_total", "oom_kills_total", "optim/skipped_step", "train/loss"])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 1e308, -1e308])
def test_evaluator_a_non_finite_counter_does_not_raise(hero, metric, value):
    """A counter going from -1e308 to 1e308 increases by inf: int(inf) must not escape."""
    ev = Evaluator(lambda run: hero)
    t0 = 1_780_000_000.0
    ev.observe(Sample(t0, "r", 1, {metric: 1.0}, state="running"))
    ev.evaluate("r", t0)
    ev.observe(Sample(t0 + 10, "r", 2, {metric: value}, state="running"))
    ev.evaluate("r", t0 + 10)
    for i, v in enumerate([2.0, -1e308, 1e308, 3.0], start=3):  # -1e308 -> 1e308: an infinite increase
        ev.observe(Sample(t0 + 10 * i, "r", i, {metric: v}, state="running"))
        ev.evaluate("r", t0 + 10 * i)


@pytest.mark.parametrize("huge", [1e308, -1e308, 5e-324])
def test_evaluator_a_huge_but_finite_loss_is_not_non_finite(hero, huge):
    ev = Evaluator(lambda run: hero)
    t0 = 1_780_000_000.0
    for s in healthy("r", t0, 60):
        ev.observe(s)
    ev.observe(Sample(t0 + 600, "r", 60, {m: huge for m in HERO_METRICS}, state="running"))
    ev.evaluate("r", t0 + 600)
    assert "loss_nonfinite" not in firing(ev, "r")


sample_values = st.one_of(
    st.sampled_from(ODD),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**6), 10**6).map(float),
)


@st.composite
def odd_rows(draw: st.DrawFn) -> list[Sample]:
    rows, t = [], 1_780_000_000.0
    for _ in range(draw(st.integers(1, 40))):
        t += draw(st.sampled_from([0.0, 0.001, 10.0, 60.0, 3600.0]))
        names = draw(st.lists(st.sampled_from(HERO_METRICS), max_size=4, unique=True))
        rows.append(
            Sample(
                t,
                "r",
                draw(st.one_of(st.none(), st.integers(-5, 30), st.sampled_from([-(2**62), 2**62]))),
                {n: draw(sample_values) for n in names},
                state=draw(st.sampled_from([None, "running", "running", "crashed", "preempted", "finished"])),
            )
        )
    return rows


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # shrinking these rows can take minutes
    suppress_health_check=[HealthCheck.too_slow],
)
@given(odd_rows())
def test_evaluator_never_raises_and_a_non_finite_latest_loss_fires(rows):
    hero = load_pack("hero")
    ev = Evaluator(lambda run: hero)
    latest_loss, state = None, None
    for s in rows:
        ev.observe(s)
        if "train/loss" in s.metrics:
            latest_loss = s.metrics["train/loss"]
        ev.evaluate("r", s.t)
        if s.state is not None:
            state = s.state
        if latest_loss is not None and not math.isfinite(latest_loss) and state != "finished":
            assert "loss_nonfinite" in firing(ev, "r"), (latest_loss, rows)  # (a finished run's resolve)
    for _key, status in ev.alerts("r"):
        assert status.state in (AlertState.PENDING, AlertState.FIRING)
    ev.evaluate("r", rows[-1].t + 86400)  # a day later: clocked rules wake up
