"""The outbox table: adding rows once per idempotency key, claiming due rows with a lease (row locks
with SKIP LOCKED on PostgreSQL, conditional updates on SQLite), and recording outcomes. SQL only: what
a claimed group's rows become is decided by ``monitor.delivery``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, func, or_, select, tuple_, update
from sqlalchemy.orm import Session

from monitor.storage.models import AlertGroup, Notification
from monitor.storage.statuses import BUSY, NotificationKind, OutboxStatus
from monitor.storage.types import EpochTime

OUTBOX = Notification.__table__  # executemany statements go to the table (one round trip for a batch)


def enqueue_once(
    s: Session,
    key: str,
    now: float,
    *,
    receiver: str,
    kind: NotificationKind = NotificationKind.CHANGE,
    payload: dict[str, Any] | None = None,
    next_attempt_at: float | None = None,
    alert_id: int | None = None,
    group_id: int | None = None,
) -> Notification | None:
    """Add an outbox row under its idempotency key, unless one with that key exists: the one place that
    makes outbox rows, so that every kind of notification is deduplicated the same way."""
    if s.scalar(select(Notification.id).where(Notification.idempotency_key == key)) is not None:
        return None
    n = Notification(
        idempotency_key=key,
        kind=kind,
        receiver=receiver,
        status=OutboxStatus.PENDING,
        payload=payload or {},
        attempts=0,
        created_at=now,
        next_attempt_at=now if next_attempt_at is None else next_attempt_at,
        alert_id=alert_id,
        group_id=group_id,
    )
    s.add(n)
    return n


def is_postgres(s: Session) -> bool:
    return s.get_bind().dialect.name == "postgresql"


def due(s: Session, now: float, limit: int) -> list[Notification]:
    """Rows due now: pending and due, or claimed by a worker whose claim expired (it died)."""
    q = (
        select(Notification)
        .where(
            or_(
                (Notification.status == OutboxStatus.PENDING) & (Notification.next_attempt_at <= now),
                (Notification.status == OutboxStatus.SENDING) & (Notification.claim_expires_at <= now),
            )
        )
        .order_by(Notification.id)
        .limit(limit)
    )
    if is_postgres(s):
        q = q.with_for_update(skip_locked=True)
    return list(s.scalars(q))


def lock_groups(s: Session, group_ids: Sequence[int]) -> dict[int, AlertGroup]:
    """These groups, locked together for this transaction: id -> group; one another replica delivers
    right now (or that is gone) is left out."""
    if not group_ids:
        return {}
    q = select(AlertGroup).where(AlertGroup.id.in_(list(group_ids)))
    q = q.with_for_update(skip_locked=True) if is_postgres(s) else q
    return {g.id: g for g in s.scalars(q)}


def sending_groups(s: Session, group_ids: Sequence[int], now: float) -> set[int]:
    """Those of these groups that have a message out with a live claim (``sending``, set-based)."""
    if not group_ids:
        return set()
    q = select(Notification.group_id).where(
        Notification.group_id.in_(list(group_ids)),
        Notification.status == OutboxStatus.SENDING,
        Notification.claim_expires_at > now,
    )
    return set(s.scalars(q.distinct()))


def take_many(s: Session, rows: Sequence[Notification], worker: str, now: float, lease: float) -> set[int]:
    """``take`` for several rows in one statement; returns the ids claimed (each row only if it is still
    as it was read: same status, same attempts)."""
    if not rows:
        return set()
    res = s.execute(
        update(Notification)
        .where(
            tuple_(Notification.id, Notification.status, Notification.attempts).in_(
                [(r.id, r.status, r.attempts) for r in rows]
            )
        )
        .values(status=OutboxStatus.SENDING, claimed_by=worker, claim_expires_at=now + lease)
        .returning(Notification.id)
        .execution_options(synchronize_session=False)
    )
    return set(res.scalars())


def merge(rows: Sequence[Notification], carrier: Notification) -> None:
    """These rows go out as part of ``carrier``'s message."""
    for r in rows:
        if r is not carrier:
            r.status, r.merged_into = OutboxStatus.MERGED, carrier.id


def set_statuses(s: Session, items: Sequence[tuple[int, OutboxStatus, str | None]]) -> None:
    """Set these rows' status, their claims released: (id, status, reason) each, one executemany."""
    if items:
        s.execute(
            update(OUTBOX)
            .where(OUTBOX.c.id == bindparam("n_id"))
            .values(status=bindparam("n_status"), claim_expires_at=None, last_error=bindparam("n_reason")),
            [{"n_id": i, "n_status": st, "n_reason": r} for i, st, r in items],
        )


def hold(s: Session, items: Sequence[tuple[int, float, str]]) -> None:
    """These claimed rows wait until a later time, their attempts untouched (a hang's page waits for the
    job's stacks): (id, until, why) each."""
    if items:
        s.execute(
            update(OUTBOX)
            .where(OUTBOX.c.id == bindparam("n_id"))
            .values(
                status=OutboxStatus.PENDING,
                next_attempt_at=bindparam("n_next", type_=EpochTime()),
                last_error=bindparam("n_why"),
                claim_expires_at=None,
            ),
            [{"n_id": i, "n_next": t, "n_why": why} for i, t, why in items],
        )


def mark_sent_many(
    s: Session, items: Sequence[tuple[int, float, str | None]]
) -> dict[int, tuple[int | None, dict]]:
    """These rows sent: (id, now, ref) each; returns id -> (group, payload) of those recorded. Two
    statements for the batch: the updates (executemany) and one read of what they were."""
    if not items:
        return {}
    s.execute(
        update(OUTBOX)
        .where(OUTBOX.c.id == bindparam("n_id"))
        .values(
            status=OutboxStatus.SENT,
            sent_at=bindparam("n_now", type_=EpochTime()),
            external_ref=bindparam("n_ref"),
            attempts=OUTBOX.c.attempts + 1,
            claim_expires_at=None,
            last_error=None,
        ),
        [{"n_id": i, "n_now": now, "n_ref": ref} for i, now, ref in items],
    )
    rows = s.execute(
        select(Notification.id, Notification.group_id, Notification.payload).where(
            Notification.id.in_([i for i, _, _ in items])
        )
    )
    return {r.id: (r.group_id, r.payload) for r in rows}


def mark_retry_many(s: Session, items: Sequence[tuple[int, float, str]]) -> None:
    """These rows to be tried again: (id, next_attempt_at, error) each, one executemany."""
    if items:
        s.execute(
            update(OUTBOX)
            .where(OUTBOX.c.id == bindparam("n_id"))
            .values(
                status=OutboxStatus.PENDING,
                next_attempt_at=bindparam("n_next", type_=EpochTime()),
                last_error=bindparam("n_error"),
                attempts=OUTBOX.c.attempts + 1,
                claim_expires_at=None,
            ),
            [{"n_id": i, "n_next": t, "n_error": e} for i, t, e in items],
        )


def mark_failed_many(s: Session, items: Sequence[tuple[int, str]]) -> None:
    """These rows failed for good: (id, error) each, one executemany."""
    if items:
        s.execute(
            update(OUTBOX)
            .where(OUTBOX.c.id == bindparam("n_id"))
            .values(
                status=OutboxStatus.FAILED,
                last_error=bindparam("n_error"),
                attempts=OUTBOX.c.attempts + 1,
                claim_expires_at=None,
            ),
            [{"n_id": i, "n_error": e} for i, e in items],
        )


def backlog(s: Session) -> int:
    q = select(func.count()).select_from(Notification).where(Notification.status.in_(BUSY))
    return s.scalar(q) or 0


def failed(s: Session) -> int:
    return (
        s.scalar(
            select(func.count()).select_from(Notification).where(Notification.status == OutboxStatus.FAILED)
        )
        or 0
    )


def oldest_pending(s: Session) -> float | None:
    """When the oldest undelivered notification was written (None: nothing waits)."""
    return s.scalar(select(func.min(Notification.created_at)).where(Notification.status.in_(BUSY)))
