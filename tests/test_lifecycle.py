"""The alert lifecycle: pending, for, firing, keep_firing_for, resolved; time only from the caller."""

from __future__ import annotations

from alerts.lifecycle import advance
from alerts.model import AlertState, Finding, fingerprint

ON = Finding(True, value=1.0, reason="bad")
OFF = Finding(False, reason="fine again")


def run(findings: list[tuple[float, Finding]], for_: float = 0.0, keep: float = 0.0):
    status, log = None, []
    for t, f in findings:
        status, tr = advance(status, f, t, for_, keep)
        if tr:
            log.append((t, tr.from_state.value, tr.to_state.value))
    return status, log


def test_for_delays_firing_until_the_condition_has_held_long_enough():
    status, log = run([(0, ON), (30, ON), (59, ON), (60, ON)], for_=60)
    assert log == [(0, "inactive", "pending"), (60, "pending", "firing")]
    assert status.state is AlertState.FIRING
    assert status.active_at == 0 and status.fired_at == 60


def test_a_blip_shorter_than_for_never_fires():
    status, log = run([(0, ON), (30, OFF), (40, ON), (90, OFF)], for_=60)
    assert [x[2] for x in log] == ["pending", "inactive", "pending", "inactive"]
    assert status is None


def test_zero_for_fires_at_once_and_resolves_when_the_condition_clears():
    status, log = run([(0, ON), (15, OFF)])
    assert log == [(0, "inactive", "firing"), (15, "firing", "resolved")]
    assert status.state is AlertState.RESOLVED and status.resolved_at == 15


def test_keep_firing_for_holds_a_flapping_alert():
    status, log = run([(0, ON), (10, OFF), (20, ON), (30, OFF), (100, OFF), (131, OFF)], keep=100)
    assert log == [(0, "inactive", "firing"), (131, "firing", "resolved")]


def test_after_resolving_a_new_true_finding_starts_a_new_instance():
    status, _ = run([(0, ON), (10, OFF)])
    status2, tr = advance(status, ON, 50)
    assert tr.from_state is AlertState.INACTIVE and tr.to_state is AlertState.FIRING
    assert status2.active_at == 50


def test_fingerprint_is_stable_and_depends_on_every_label():
    a = fingerprint({"alertname": "stall", "run": "r1"})
    assert a == fingerprint({"run": "r1", "alertname": "stall"})
    assert a != fingerprint({"alertname": "stall", "run": "r2"})


UNKNOWN = Finding(False, reason="source unreadable", unknown=True)


def test_an_unknown_finding_neither_fires_nor_resolves_nor_ends_a_pending_alert():
    status, log = run([(0, ON), (10, UNKNOWN), (20, UNKNOWN)])
    assert log == [(0, "inactive", "firing")] and status.state is AlertState.FIRING
    status, log = run([(0, ON), (10, UNKNOWN), (70, ON)], for_=60)
    assert log == [(0, "inactive", "pending"), (70, "pending", "firing")]
    status, log = run([(0, UNKNOWN), (100, UNKNOWN)])
    assert log == [] and status is None
