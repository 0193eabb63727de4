"""The outbox on SQL: claims with a lease (FOR UPDATE SKIP LOCKED on PostgreSQL) and outcome records."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from alerts.notifiers.base import Notification as Message
from alerts.outbox import ClaimedNotification
from monitor.storage.models import Notification


def to_message(row: Notification) -> Message:
    p = row.payload
    return Message(
        idempotency_key=row.idempotency_key,
        receiver=row.receiver,
        status=p["status"],
        alertname=p["alertname"],
        severity=p["severity"],
        labels=p.get("labels") or {},
        annotations=p.get("annotations") or {},
        started_at=p["started_at"],
        ended_at=p.get("ended_at"),
        value=p.get("value"),
        step=p.get("step"),
        extra=p.get("extra") or {},
    )


class SqlOutboxStore:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    def claim_due(
        self, now: float, limit: int, worker: str, lease_seconds: float
    ) -> Sequence[ClaimedNotification]:
        with self.sessions.begin() as s:
            due = or_(
                (Notification.status == "pending") & (Notification.next_attempt_at <= now),
                (Notification.status == "sending") & (Notification.claim_expires_at <= now),  # a dead claimer
            )
            q = select(Notification).where(due).order_by(Notification.id).limit(limit)
            if s.get_bind().dialect.name == "postgresql":
                q = q.with_for_update(skip_locked=True)
            rows = list(s.scalars(q))
            claimed = []
            for row in rows:
                # Conditional update: on SQLite (no row locks) only one claimer wins each row.
                res = s.execute(
                    update(Notification)
                    .where(
                        Notification.id == row.id,
                        Notification.status == row.status,
                        Notification.attempts == row.attempts,
                    )
                    .values(status="sending", claimed_by=worker, claim_expires_at=now + lease_seconds)
                    .execution_options(synchronize_session=False)
                )
                if res.rowcount == 1:
                    claimed.append(ClaimedNotification(row.id, row.attempts, to_message(row)))
            return claimed

    def mark_sent(self, id: int, now: float, ref: str | None) -> None:
        self._set(
            id,
            status="sent",
            sent_at=now,
            external_ref=ref,
            attempts=Notification.attempts + 1,
            claim_expires_at=None,
            last_error=None,
        )

    def mark_retry(self, id: int, now: float, next_attempt_at: float, error: str) -> None:
        self._set(
            id,
            status="pending",
            next_attempt_at=next_attempt_at,
            last_error=error,
            attempts=Notification.attempts + 1,
            claim_expires_at=None,
        )

    def mark_failed(self, id: int, now: float, error: str) -> None:
        self._set(
            id, status="failed", last_error=error, attempts=Notification.attempts + 1, claim_expires_at=None
        )

    def _set(self, id: int, **values: object) -> None:
        with self.sessions.begin() as s:
            s.execute(
                update(Notification)
                .where(Notification.id == id)
                .values(**values)
                .execution_options(synchronize_session=False)
            )

    def backlog(self) -> int:
        from sqlalchemy import func

        with self.sessions() as s:
            return (
                s.scalar(
                    select(func.count())
                    .select_from(Notification)
                    .where(Notification.status.in_(("pending", "sending")))
                )
                or 0
            )
