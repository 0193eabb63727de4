"""No blind page at start-up (issue 39, point 3): an input a source queries (Prometheus's OOM counter)
counts as never sent only some minutes after herowatch first looked for it, however long the run's
W&B history is; the first look survives a restart (it is saved with the run's arrivals)."""

from __future__ import annotations

from monitor.engine.arrivals import Arrivals
from monitor.engine.coverage import LOOK_GRACE, judge
from monitor.rules.base import STEP
from tests.rules.helpers_rules import T0, hero

OOM = "oom_kills_total"
HOUR = 3600.0


def rules():
    return [(spec, frozenset({OOM}) if spec.name == "oom_kills" else frozenset()) for spec in hero()]


def history(arrivals: Arrivals, steps: int, every: float, until: float) -> None:
    """A run's W&B history: ``steps`` rows with a loss, the last one at ``until``."""
    arrivals.observe_times(("train/loss",), True, [until - (steps - 1 - i) * every for i in range(steps)])


def oom_state(arrivals: Arrivals, now: float):
    cov = judge("r", rules(), arrivals, now, promised=frozenset({OOM, STEP}))
    return cov.input(OOM)


def test_a_queried_input_is_young_for_minutes_after_herowatch_first_looks_whatever_the_history():
    started = T0 + 3 * HOUR  # herowatch (and a fresh Prometheus) start beside a run 1,572 steps old
    arrivals = Arrivals(tracked=frozenset({"train/loss", OOM}))
    history(arrivals, 1572, 6.8, started)
    arrivals.look(frozenset({OOM}), started)
    assert oom_state(arrivals, started + 60).state == "warming"
    assert "first looked for 1m" in oom_state(arrivals, started + 60).why
    assert oom_state(arrivals, started + LOOK_GRACE - 5).state == "warming"
    late = oom_state(arrivals, started + LOOK_GRACE + 60)
    assert late.state == "blind" and late.silent_for == LOOK_GRACE + 60  # counted from the first look


def test_the_first_look_survives_a_restart_and_a_later_look_does_not_move_it():
    started = T0 + 3 * HOUR
    before = Arrivals(tracked=frozenset({"train/loss", OOM}))
    history(before, 1572, 6.8, started)
    before.look(frozenset({OOM}), started)
    after = Arrivals(tracked=frozenset({"train/loss", OOM}))
    after.restore(before.export())
    after.look(frozenset({OOM}), started + LOOK_GRACE)  # the restarted herowatch looks again
    assert oom_state(after, started + LOOK_GRACE + 60).state == "blind"


def test_an_input_that_arrives_within_the_grace_is_covered():
    started = T0 + 3 * HOUR
    arrivals = Arrivals(tracked=frozenset({"train/loss", OOM}))
    history(arrivals, 1572, 6.8, started)
    arrivals.look(frozenset({OOM}), started)
    arrivals.observe_times((OOM,), False, [started + 20 + 15 * i for i in range(30)])
    assert oom_state(arrivals, started + 460).state == "covered"
