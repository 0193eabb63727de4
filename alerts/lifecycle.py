"""The alert lifecycle as a pure state machine, after Prometheus' rules/alerting.go.

inactive -> pending (condition true, waiting out ``for``) -> firing -> resolved.
``keep_firing_for`` keeps a firing alert firing for a while after its condition turns false.
No I/O, no clock: ``now`` is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from alerts.model import AlertState, Finding


@dataclass(frozen=True)
class AlertStatus:
    """Where one alert instance is in its lifecycle."""

    state: AlertState
    active_at: float  # when the condition first became true for this instance
    fired_at: float | None = None
    resolved_at: float | None = None
    last_true_at: float | None = None  # the last evaluation at which the condition held
    value: float | None = None
    step: int | None = None
    onset: float | None = None  # when the evidence began (the rule's ``Finding.onset``), the earliest said
    onset_step: int | None = None


def _onset(status: AlertStatus | None, finding: Finding) -> dict[str, float | int | None]:
    """The episode's onset: the earliest a rule reported for it (None: no rule said)."""
    if (
        status is not None
        and status.onset is not None
        and (finding.onset is None or status.onset <= finding.onset)
    ):
        return {"onset": status.onset, "onset_step": status.onset_step}
    if finding.onset is None:
        return {"onset": None, "onset_step": None}
    return {"onset": finding.onset, "onset_step": finding.onset_step}


@dataclass(frozen=True)
class Transition:
    from_state: AlertState
    to_state: AlertState
    at: float
    reason: str


def advance(
    status: AlertStatus | None,
    finding: Finding,
    now: float,
    for_seconds: float = 0.0,
    keep_firing_for: float = 0.0,
) -> tuple[AlertStatus | None, Transition | None]:
    """Apply one evaluation to an alert instance.

    ``status`` is the current active instance (pending or firing) or None. Returns the new status
    (None when the instance ended without firing) and the transition, if the state changed. A
    returned status in state RESOLVED is finished: the next true finding starts a new instance.
    An ``unknown`` finding changes nothing.
    """
    if status is not None and not status.state.active:
        status = None
    if finding.unknown:  # the rule cannot tell: nothing changes, not even a pending alert's clock
        return status, None

    if finding.active:
        if status is None:
            if for_seconds <= 0:
                new = AlertStatus(
                    AlertState.FIRING,
                    now,
                    fired_at=now,
                    last_true_at=now,
                    value=finding.value,
                    step=finding.step,
                    **_onset(None, finding),
                )
                return new, Transition(AlertState.INACTIVE, AlertState.FIRING, now, finding.reason)
            new = AlertStatus(
                AlertState.PENDING,
                now,
                last_true_at=now,
                value=finding.value,
                step=finding.step,
                **_onset(None, finding),
            )
            return new, Transition(AlertState.INACTIVE, AlertState.PENDING, now, finding.reason)
        updated = replace(
            status, last_true_at=now, value=finding.value, step=finding.step, **_onset(status, finding)
        )
        if status.state is AlertState.PENDING and now - status.active_at >= for_seconds:
            fired = replace(updated, state=AlertState.FIRING, fired_at=now)
            reason = f"{finding.reason} (held for {_fmt(now - status.active_at)})"
            return fired, Transition(AlertState.PENDING, AlertState.FIRING, now, reason)
        return updated, None

    if status is None:
        return None, None
    reason = finding.reason or "condition no longer holds"
    if status.state is AlertState.PENDING:
        return None, Transition(AlertState.PENDING, AlertState.INACTIVE, now, reason)
    last_true = status.last_true_at if status.last_true_at is not None else status.active_at
    if keep_firing_for > 0 and now - last_true < keep_firing_for:
        return status, None
    resolved = replace(status, state=AlertState.RESOLVED, resolved_at=now)
    return resolved, Transition(AlertState.FIRING, AlertState.RESOLVED, now, reason)


def _fmt(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
