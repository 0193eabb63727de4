"""``job_alert``: a custom alert a job pushed (as W&B's ``wandb.alert``) fires, is throttled, resolves."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from alerts.model import Severity
from monitor.engine.coverage import plan
from monitor.engine.evaluator import Evaluator
from monitor.rules.kinds import DETECTORS
from monitor.rules.loader import load_pack
from monitor.samples import ALERT_METRIC, JobAlert, Sample, clean
from monitor.traces.replay import replay
from monitor.traces.trace import format_sample, read_trace
from tests.rules.helpers_rules import T0, rule, steps

MIN = 60.0


def pushed(at: float, title: str, text: str = "", level: str = "error", **kw: object) -> Sample:
    alert = JobAlert(title, text, level, **kw)
    return Sample(T0 + at, "r", metrics={ALERT_METRIC: alert.metric()}, source="push", alert=alert)


def det(level: str = "error", **raw: object):
    spec = rule(kind="job_alert", level=level, resolve_after="1h", **raw)
    return DETECTORS["job_alert"](spec, "r")


def test_severity_follows_the_level_and_info_never_pages():
    assert rule(kind="job_alert", level="error").severity is Severity.CRITICAL
    assert rule(kind="job_alert", level="warn").severity is Severity.WARNING
    assert rule(kind="job_alert", level="info").severity is Severity.INFO
    assert rule(kind="job_alert", level="warn", severity="critical").severity is Severity.CRITICAL
    with pytest.raises(ValidationError, match="never pages"):
        rule(kind="job_alert", level="info", severity="critical")


@pytest.mark.parametrize(
    "events, now, fires",
    [
        ([], 10, None),  # nothing sent: quiet
        ([(0, "Shard corrupt", "error")], 10, "Shard corrupt"),
        ([(0, "Shard corrupt", "warn")], 10, None),  # another level: another rule's
        ([(0, "Shard corrupt", "error")], 3599, "Shard corrupt"),
        ([(0, "Shard corrupt", "error")], 3600, None),  # resolves on its own after resolve_after
        ([(0, "A", "error"), (1800, "A", "error")], 5000, "A"),  # a repeat after the wait keeps it up
        ([(0, "A", "error"), (10, "B", "error")], 20, "B"),  # the newer title is the alert
        ([(0, "A", "error"), (100, "A", "warn")], 120, None),  # lowered (after the wait): another rule's
    ],
)
def test_when_a_pushed_alert_fires(events, now, fires):
    d = det()
    for at, title, level in events:
        d.observe(pushed(at, title, "text", level))
    f = d.evaluate(T0 + now)
    assert f.active is (fires is not None)
    if fires:
        assert f.extra_labels == {"title": fires} and f.reason == f"{fires}: text"


def test_a_repeat_within_the_wait_is_dropped_and_does_not_keep_the_alert_up():
    d = det()
    d.observe(pushed(0, "Shard corrupt", "first", wait=600))
    d.observe(pushed(300, "Shard corrupt", "second", wait=600))  # dropped: within 10 minutes
    assert d.evaluate(T0 + 400).reason == "Shard corrupt: first"
    assert not d.evaluate(T0 + 3600).active, "the dropped repeat did not extend it"
    d.observe(pushed(700, "Shard corrupt", "third", wait=600))  # past the wait: taken
    assert d.evaluate(T0 + 3600).reason == "Shard corrupt: third"


def test_the_wait_throttles_a_title_across_levels_as_wandb_does():
    d = det("error")
    d.observe(pushed(0, "Loader", "slow", "warn", wait=300))
    d.observe(pushed(60, "Loader", "stuck", "error", wait=300))  # within the wait of the WARN: dropped
    assert not d.evaluate(T0 + 120).active


def test_a_resolve_ends_the_alert_at_once_and_the_title_may_fire_again():
    d = det()
    d.observe(pushed(0, "Shard corrupt", "x", wait=600))
    d.observe(pushed(60, "Shard corrupt", resolved=True))
    assert not d.evaluate(T0 + 61).active and not d.hot
    d.observe(pushed(120, "Shard corrupt", "again", wait=600))  # a resolve also ends the wait
    assert d.evaluate(T0 + 121).reason == "Shard corrupt: again"


def test_state_survives_a_snapshot_and_titles_are_bounded():
    d = det()
    for i in range(300):
        d.observe(pushed(i, f"t{i}", "x"))
    assert len(d.firing) <= 256 and len(d.taken) <= 256
    again = det()
    assert again.import_state(d.export_state())
    assert again.evaluate(T0 + 400).extra_labels == {"title": "t299"}


def test_two_titles_are_two_alerts_with_the_title_as_label_and_text_in_the_summary():
    ev = Evaluator(lambda run: [r for r in load_pack("hero") if r.kind == "job_alert"])
    ev.observe(pushed(0, "Shard corrupt", "shard 17 failed its checksum"))
    events = ev.evaluate("r", T0 + 1)
    assert [(e.key.labels["title"], e.key.labels["severity"]) for e in events] == [
        ("Shard corrupt", "critical")
    ]
    assert events[0].annotations["summary"] == "r: the job says: Shard corrupt: shard 17 failed its checksum"
    ev.observe(pushed(30, "Upload failed", "checkpoint 3 not uploaded", "info"))
    (info,) = ev.evaluate("r", T0 + 31)
    assert info.key.labels["title"] == "Upload failed" and info.key.rule.severity is Severity.INFO
    assert info.key.fingerprint != events[0].key.fingerprint
    assert len(ev.alerts("r")) == 2
    assert [e.transition.to_state.value for e in ev.evaluate("r", T0 + 3700)] == [
        "resolved"
    ] * 2  # both, on their own


def test_a_run_that_never_sends_alerts_or_stops_sending_them_is_not_blind_for_them():
    rules = [r for r in load_pack("hero") if r.kind == "job_alert"]
    for sends in (0, 30):  # never; or an alert every 10s for 5 minutes, then none while training goes on
        ev = Evaluator(lambda run, rules=rules: rules)
        for i, s in enumerate(steps([2.0] * 300, every=10)):
            ev.observe(Sample(s.t, s.run, s.step, s.metrics, s.state, "push"))
            if i < sends:
                ev.observe(pushed(i * 10, f"note {i}", level="info", wait=0))
        cov = ev.coverage("r", T0 + 3000, promised=frozenset({"@step", "@state"}))
        assert not cov.blind(), cov.rules
    assert plan([(r, frozenset()) for r in rules], frozenset(), True, None).rules == ()


def test_the_alert_crosses_the_boundary_and_the_trace_format_whole():
    raw = Sample(T0, "r", alert=JobAlert("  Shard corrupt ", "x" * 5000, "ERROR", wait=1e9))
    s = clean(raw)
    assert s is not None and s.alert == JobAlert("Shard corrupt", "x" * 2000, "error", 7 * 86400.0)
    assert s.metrics == {ALERT_METRIC: 3.0}
    assert clean(Sample(T0, "r", alert=JobAlert("t", level="fatal"))).alert is None
    line = format_sample(pushed(5, "Shard corrupt", "bad", "warn", wait=30))
    (back,) = read_trace([line])
    assert back.alert == JobAlert("Shard corrupt", "bad", "warn", 30.0) and back.metrics[ALERT_METRIC] == 2.0
    (bare,) = read_trace(['{"t": 1, "run": "r", "alert": {"title": "Hi"}}'])
    assert bare.alert == JobAlert("Hi") and bare.metrics == {ALERT_METRIC: 1.0}
    with pytest.raises(ValueError, match="alert: title"):
        read_trace(['{"t": 1, "run": "r", "alert": {"title": "' + "x" * 65 + '"}}'])


def test_replay_of_a_recorded_trace_keeps_the_alerts_in_its_batches():
    rules = [r for r in load_pack("hero") if r.kind == "job_alert"]
    rows = [format_sample(s) for s in steps([2.0] * 50, every=10)]
    # alerts back to back with the same keys: the replayer batches such rows (``Replayer.feed``)
    rows += [format_sample(pushed(500 + i, f"alert {i}", "x", wait=0)) for i in range(3)]
    result = replay(read_trace(rows), rules)
    fired = [e for e in result.events if e.state == "firing"]
    assert [e.reason for e in fired] == ["alert 0: x", "alert 1: x", "alert 2: x"]


def test_an_alert_sent_just_before_the_job_exits_still_pages():
    ev = Evaluator(lambda run: [r for r in load_pack("hero") if r.kind == "job_alert"])
    ev.observe(pushed(0, "Validation failed", "eval loss 9.1 on the last checkpoint"))
    ev.observe(Sample(T0 + 1, "r", state="finished", source="push"))  # read in the same poll
    (event,) = ev.evaluate("r", T0 + 2)
    assert event.transition.to_state.value == "firing" and event.key.labels["title"] == "Validation failed"
    assert not ev.evaluate("r", T0 + 600), "it stands after the end, till its resolve_after"
