"""Alert instances and their transitions (the incident timeline)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.lifecycle import AlertStatus, Transition
from alerts.model import AlertState
from monitor.storage.models import Alert, AlertTransition

ACTIVE = (AlertState.PENDING.value, AlertState.FIRING.value)


def load_active(session: Session, runs: Iterable[str] | None = None) -> list[Alert]:
    """The open alerts (of these runs, or watches for their own alerts, if given)."""
    q = select(Alert).where(Alert.state.in_(ACTIVE))
    if runs is not None:
        q = q.where(Alert.run_id.in_(list(runs)))
    return list(session.scalars(q))


def status_of(row: Alert) -> AlertStatus:
    return AlertStatus(
        AlertState(row.state),
        row.active_at,
        row.fired_at,
        row.resolved_at,
        row.last_true_at,
        row.value,
        row.step,
        row.onset_at,
        row.onset_step,
    )


@dataclass(frozen=True)
class AlertChange:
    """What the engine tells storage about one alert state change."""

    fingerprint: str
    rule: str
    kind: str
    run: str
    metric: str | None
    severity: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    transition: Transition
    status: AlertStatus | None
    value: float | None
    threshold: float | None
    step: int | None
    hints: Mapping[str, Any] | None = None  # fleet members that stand out (when it fires)


def record_change(session: Session, change: AlertChange, alert_id: int | None, now: float) -> Alert:
    """Create or update the alert instance for ``change`` and append its transition."""
    tr, st = change.transition, change.status
    row = session.get(Alert, alert_id) if alert_id is not None else None
    if row is None:
        row = Alert(
            fingerprint=change.fingerprint,
            rule=change.rule,
            kind=change.kind,
            run_id=change.run,
            metric=change.metric,
            severity=change.severity,
            labels=dict(change.labels),
            active_at=st.active_at if st else tr.at,
            state=tr.to_state.value,
            updated_at=now,
        )
        session.add(row)
    row.state = tr.to_state.value
    if tr.to_state is not AlertState.RESOLVED or not row.annotations:
        # a resolved alert keeps the text it fired with (the reason it ended is in its transition)
        row.annotations = dict(change.annotations)
        row.value, row.threshold = change.value, change.threshold
        row.step = change.step
    if tr.to_state is AlertState.RESOLVED:  # what is true now, beside the text it fired with
        row.annotations = {**(row.annotations or {}), "resolved_reason": tr.reason}
    if change.hints is not None:
        row.hints = dict(change.hints)
    row.updated_at = now
    if st is not None:
        row.fired_at, row.resolved_at, row.last_true_at = st.fired_at, st.resolved_at, st.last_true_at
        row.onset_at, row.onset_step = st.onset, st.onset_step
    session.flush()
    session.add(
        AlertTransition(
            alert_id=row.id,
            run_id=change.run,
            at=tr.at,
            from_state=tr.from_state.value,
            to_state=tr.to_state.value,
            reason=tr.reason,
            value=change.value,
            step=change.step,
        )
    )
    return row


def refresh_annotations(
    session: Session, alert_id: int, annotations: Mapping[str, str], value: float | None, step: int | None
) -> None:
    """A firing alert's text, rendered again at this evaluation (it says how long, now)."""
    row = session.get(Alert, alert_id)
    if (
        row is not None
        and row.state == AlertState.FIRING.value
        and dict(row.annotations or {}) != dict(annotations)
    ):
        row.annotations = dict(annotations)
        row.value = value
        if step is not None:
            row.step = step


def list_alerts(
    session: Session,
    state: str | None = None,
    run: str | None = None,
    severity: str | None = None,
    limit: int = 500,
) -> list[Alert]:
    q = select(Alert)
    if state:
        q = q.where(Alert.state == state)
    if run:
        q = q.where(Alert.run_id == run)
    if severity:
        q = q.where(Alert.severity == severity)
    return list(session.scalars(q.order_by(Alert.updated_at.desc()).limit(limit)))


def timeline(session: Session, run: str | None = None, limit: int = 500) -> list[AlertTransition]:
    q = select(AlertTransition)
    if run:
        q = q.where(AlertTransition.run_id == run)
    return list(
        session.scalars(q.order_by(AlertTransition.at.desc(), AlertTransition.id.desc()).limit(limit))
    )
