"""One poll, many rows: a NaN loss reaches the receiver at every poll interval (issue 26, point 7),
and a one-step loss blip among the rows of one poll is recorded.

``bench/detect_latency.py`` printed ``missed`` for ``loss_nonfinite`` at a 2-second poll: a poll of a
run that logs every second reads two rows, the NaN step and a finite one after it, and the rule looked
at the newest value only. The whole cycle here (the sim source polled by the engine, the hero pack,
the outbox, a console receiver) on a manual clock, at 1, 2 and 5 s poll intervals, and the rule by
itself with a NaN in the middle of one poll's rows."""

from __future__ import annotations

import math

import pytest

from monitor.engine.evaluator import Evaluator
from monitor.rules.loader import load_rules
from monitor.samples import Sample
from tests.helpers import make_service, tick

NAN_AT = 20.0


def config(interval: float) -> str:
    return f"""
watch:
  - name: bench-run
    poll_interval: {interval}s
    sim:
      step_time: 1s
      jitter: 0.02
      checkpoint_every: 100000
      eval_every: 100000
      incidents:
        - {{kind: nan, at: {NAN_AT:g}s}}
rules:
  packs: [hero]
route: {{receiver: console, group_by: [run, alertname], group_wait: 0s, group_interval: 1s}}
"""


@pytest.mark.parametrize("interval", [1.0, 2.0, 5.0])
def test_a_nan_loss_is_paged_at_every_poll_interval(db_url, clock, interval):
    service, out = make_service(db_url, clock, config(interval))
    service.engine.resume()
    start = clock.time()
    tick(service, clock, NAN_AT + 3 * interval, every=interval)
    text = out.getvalue()
    assert text.count("FIRING CRITICAL loss_nonfinite") == 1, text
    assert "train/loss is nan" in text.lower() or "train/loss was nan" in text.lower(), text
    service.stop()
    assert clock.time() - start <= NAN_AT + 3 * interval


def test_a_nan_in_the_middle_of_one_polls_rows_fires_and_then_clears():
    ev = Evaluator(lambda run: [s for s in load_rules(["hero"]) if s.name == "loss_nonfinite"])
    rows = [Sample(100.0 + i, "r", i, {"train/loss": 2.0}, "running") for i in range(5)]
    rows[2] = Sample(102.0, "r", 2, {"train/loss": math.nan}, "running")
    for s in rows:
        ev.observe(s)
    (event,) = ev.evaluate("r", 105.0)
    assert event.transition.to_state.value == "firing" and event.finding.step == 2
    assert "was nan at step 2 (now 2)" in event.finding.reason.lower()
    assert ev.evaluate("r", 110.0) == []  # the same evaluation again: still firing, nothing new
    ev.observe(Sample(111.0, "r", 11, {"train/loss": 1.9}))
    ev.evaluate("r", 111.0)  # finite after the page: the condition cleared (keep_firing_for holds it)
    ((_, det),) = [(s, d) for s, d in ev.detectors("r") if s.name == "loss_nonfinite"]
    assert det.evaluate(112.0).active is False


def test_a_one_step_loss_blip_in_the_middle_of_one_polls_rows_is_recorded():
    """The live paging test's flake ("timed out waiting for the blip's info"): on a loaded box a poll
    reads several rows, and the spike rule, too, looked at the newest value only."""
    rules = [s for s in load_rules(["hero"]) if s.name == "loss_jump"]
    ev = Evaluator(lambda run: rules)
    losses = [2.0 + 0.01 * ((7 * i) % 5) for i in range(720)]  # two hours, a step every 10 s
    t = 1000.0
    for i, loss in enumerate(losses):  # a healthy baseline, evaluated as it comes
        ev.observe(Sample(t + 10 * i, "r", i, {"train/loss": loss}, "running" if i == 0 else None))
        assert ev.evaluate("r", t + 10 * i) == []
    n, t = len(losses), t + 10 * len(losses)
    ev.observe(Sample(t, "r", n, {"train/loss": 8.0}))  # the blip, then two ordinary steps
    ev.observe(Sample(t + 10, "r", n + 1, {"train/loss": 2.01}))
    ev.observe(Sample(t + 20, "r", n + 2, {"train/loss": 2.02}))
    (event,) = ev.evaluate("r", t + 20)
    assert event.transition.to_state.value == "firing" and event.finding.step == n
    assert f"at step {n} was" in event.finding.reason and "one-step spike" in event.finding.reason
