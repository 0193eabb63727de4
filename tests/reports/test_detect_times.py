"""The report's detect time runs from the onset of the evidence the rule reported (stored with the alert),
to the first notification: a rule judged over a window is not "detected in 0 s"."""

from __future__ import annotations

import pytest

from alerts.lifecycle import advance
from alerts.model import AlertState, Finding
from monitor.reports.incidents_part import pages
from monitor.reports.model import Period
from monitor.storage.models import Alert

T = 1_790_000_000.0


def alert(rule: str, active: float, fired: float, onset: float | None) -> Alert:
    return Alert(
        id=1,
        fingerprint="f",
        rule=rule,
        kind="rule",
        run_id="r",
        severity="critical",
        labels={},
        state="firing",
        active_at=active,
        fired_at=fired,
        onset_at=onset,
        updated_at=fired,
    )


@pytest.mark.parametrize("rule", ["rl_reward_collapse", "rl_kl_blowup", "rl_entropy_collapse"])
def test_detect_runs_from_the_onset_the_rule_reported(rule):
    p = Period(start=T - 86400, end=T + 86400, label="x")
    (page,) = pages([alert(rule, T + 1740, T + 1740, onset=T)], [], p, {})
    assert page.detect_seconds == pytest.approx(1740.0), "29 minutes, not 0 s"
    (old,) = pages([alert(rule, T + 1740, T + 1740, onset=None)], [], p, {})
    assert old.detect_seconds == 0.0, "an alert without an onset (older versions) falls back"


def test_the_lifecycle_keeps_the_earliest_onset_of_an_episode():
    st, _ = advance(None, Finding(True, onset=T, onset_step=10), T + 600, for_seconds=60)
    st, _ = advance(st, Finding(True, onset=T + 300), T + 700, for_seconds=60)
    assert st.state is AlertState.FIRING and (st.onset, st.onset_step) == (T, 10)
    st2, _ = advance(None, Finding(True), T, for_seconds=0)
    assert st2.onset is None
