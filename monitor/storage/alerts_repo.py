"""Alert instances, their transitions (the incident timeline) and the outbox rows they cause.

``record_event`` writes all three in the caller's transaction: a notification exists if and only if
the state change that caused it was committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.lifecycle import AlertStatus
from alerts.model import AlertState
from monitor.evaluator import AlertEvent
from monitor.storage.models import Alert, AlertTransition, Notification

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


def enqueue(
    session: Session,
    row: Alert,
    status: str,
    receivers: Sequence[str],
    now: float,
    extra: dict[str, Any] | None = None,
) -> list[Notification]:
    """One outbox row per receiver. The idempotency key makes a second enqueue of the same change a no-op."""
    out = []
    for receiver in receivers:
        key = f"alert:{row.id}:{status}:{receiver}"
        if session.scalar(select(Notification.id).where(Notification.idempotency_key == key)) is not None:
            continue
        payload = {
            "status": status,
            "alertname": row.rule,
            "severity": row.severity,
            "labels": row.labels,
            "annotations": row.annotations,
            "started_at": row.fired_at or row.active_at,
            "ended_at": row.resolved_at,
            "value": row.value,
            "step": row.step,
            "alert_id": row.id,
            "extra": extra or {},
        }
        n = Notification(
            idempotency_key=key,
            alert_id=row.id,
            receiver=receiver,
            status="pending",
            payload=payload,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
        session.add(n)
        out.append(n)
    return out


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
