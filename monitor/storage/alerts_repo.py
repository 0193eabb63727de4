"""Alert instances and their transitions (the incident timeline)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.lifecycle import AlertStatus
from alerts.model import AlertState
from monitor.engine.evaluator import AlertEvent
from monitor.storage.models import Alert, AlertTransition

ACTIVE = (AlertState.PENDING.value, AlertState.FIRING.value)


def load_active(session: Session) -> list[Alert]:
    return list(session.scalars(select(Alert).where(Alert.state.in_(ACTIVE))))


def status_of(row: Alert) -> AlertStatus:
    return AlertStatus(
        AlertState(row.state),
        row.active_at,
        row.fired_at,
        row.resolved_at,
        row.last_true_at,
        row.value,
        row.step,
    )


def record_event(session: Session, event: AlertEvent, alert_id: int | None, now: float) -> Alert:
    """Create or update the alert instance for ``event`` and append its transition."""
    key, tr, st = event.key, event.transition, event.status
    row = session.get(Alert, alert_id) if alert_id is not None else None
    if row is None:
        row = Alert(
            fingerprint=key.fingerprint,
            rule=key.rule.name,
            kind=key.rule.kind,
            run_id=key.run,
            metric=key.rule.metric,
            severity=key.rule.severity.value,
            labels=dict(key.labels),
            active_at=st.active_at if st else tr.at,
            state=tr.to_state.value,
            updated_at=now,
        )
        session.add(row)
    row.state = tr.to_state.value
    row.annotations = dict(event.annotations)
    row.value, row.threshold = event.finding.value, event.finding.threshold
    row.step = event.finding.step
    row.updated_at = now
    if st is not None:
        row.fired_at, row.resolved_at, row.last_true_at = st.fired_at, st.resolved_at, st.last_true_at
    session.flush()
    session.add(
        AlertTransition(
            alert_id=row.id,
            run_id=key.run,
            at=tr.at,
            from_state=tr.from_state.value,
            to_state=tr.to_state.value,
            reason=tr.reason,
            value=event.finding.value,
            step=event.finding.step,
        )
    )
    return row


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
