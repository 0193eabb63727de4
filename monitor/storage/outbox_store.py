"""The outbox on SQL: claims with a lease (row locks with SKIP LOCKED on PostgreSQL), group-wise
composition at delivery time, and outcome records."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from alerts.notifiers.base import Notification as Message
from alerts.outbox import ClaimedNotification
from monitor.storage.models import AlertGroup, Notification

if TYPE_CHECKING:
    from monitor.delivery.planner import Planner


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
        extra={"kind": row.kind, **(p.get("extra") or {})},
    )


class SqlOutboxStore:
    def __init__(self, sessions: sessionmaker[Session], planner: Planner | None = None) -> None:
        self.sessions = sessions
        self.planner = planner

    def claim_due(
        self, now: float, limit: int, worker: str, lease_seconds: float
    ) -> Sequence[ClaimedNotification]:
        with self.sessions.begin() as s:
            pg = s.get_bind().dialect.name == "postgresql"
            due = or_(
                (Notification.status == "pending") & (Notification.next_attempt_at <= now),
                (Notification.status == "sending") & (Notification.claim_expires_at <= now),  # a dead claimer
            )
            q = select(Notification).where(due).order_by(Notification.id).limit(limit * 4)
            if pg:
                q = q.with_for_update(skip_locked=True)
            groups: dict[int, list[Notification]] = defaultdict(list)
            claimed: list[ClaimedNotification] = []
            for row in s.scalars(q):
                if row.group_id is None:
                    if self._take(s, row, worker, now, lease_seconds):
                        claimed.append(ClaimedNotification(row.id, row.attempts, to_message(row)))
                else:
                    groups[row.group_id].append(row)
            for gid, rows in groups.items():
                if len(claimed) >= limit:
                    break
                got = self._claim_group(s, gid, rows, worker, now, lease_seconds, pg)
                if got is not None:
                    claimed.append(got)
            return claimed

    def _claim_group(
        self, s: Session, gid: int, rows: list[Notification], worker: str, now: float, lease: float, pg: bool
    ) -> ClaimedNotification | None:
        gq = select(AlertGroup).where(AlertGroup.id == gid)
        group = s.scalar(gq.with_for_update(skip_locked=True) if pg else gq)
        if group is None:  # another replica is delivering this group right now
            return None
        live = s.scalar(
            select(func.count())
            .select_from(Notification)
            .where(
                Notification.group_id == gid,
                Notification.status == "sending",
                Notification.claim_expires_at > now,
            )
        )
        if live:  # one message of a group at a time, in order
            return None
        expired = [r for r in rows if r.status == "sending"]
        batch = expired[:1] if expired else rows  # a re-send goes out as it was, under its own key
        carrier = batch[-1]
        if not self._take(s, carrier, worker, now, lease):
            return None
        for r in batch[:-1]:
            r.status, r.merged_into = "merged", carrier.id
        message = self.planner.compose(s, group, batch, now) if self.planner else to_message(carrier)
        if message is None:
            s.execute(
                update(Notification)
                .where(Notification.id == carrier.id)
                .values(status="muted", claim_expires_at=None, last_error="silenced or inhibited")
                .execution_options(synchronize_session=False)
            )
            return None
        return ClaimedNotification(carrier.id, carrier.attempts, message)

    @staticmethod
    def _take(s: Session, row: Notification, worker: str, now: float, lease: float) -> bool:
        # Conditional update: on SQLite (no row locks) only one claimer wins each row.
        res = s.execute(
            update(Notification)
            .where(
                Notification.id == row.id,
                Notification.status == row.status,
                Notification.attempts == row.attempts,
            )
            .values(status="sending", claimed_by=worker, claim_expires_at=now + lease)
            .execution_options(synchronize_session=False)
        )
        return res.rowcount == 1

    def mark_sent(self, id: int, now: float, ref: str | None) -> None:
        with self.sessions.begin() as s:
            row = s.get(Notification, id)
            row.status, row.sent_at, row.external_ref = "sent", now, ref
            row.attempts += 1
            row.claim_expires_at, row.last_error = None, None
            if row.group_id is not None:
                group = s.get(AlertGroup, row.group_id)
                group.last_sent_at = now
                if ref:  # the receiver's thread root: a re-posted root replaces the old one
                    group.root_ref = ref

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
        with self.sessions() as s:
            return (
                s.scalar(
                    select(func.count())
                    .select_from(Notification)
                    .where(Notification.status.in_(("pending", "sending")))
                )
                or 0
            )

    def oldest_waiting(self) -> float | None:
        """When the oldest notification still waiting for delivery was written (None: none waits)."""
        with self.sessions() as s:
            return s.scalar(
                select(func.min(Notification.created_at)).where(
                    Notification.status.in_(("pending", "sending"))
                )
            )

    def failed(self) -> int:
        with self.sessions() as s:
            return (
                s.scalar(
                    select(func.count()).select_from(Notification).where(Notification.status == "failed")
                )
                or 0
            )
