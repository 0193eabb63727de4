"""The audit trail (``AuditEvent`` rows): record one event, find events. SQL only; who the actor is and
what they may do are decided above (``monitor.delivery.actor``, ``monitor.web.identity``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.storage.people_models import AuditEvent

MAX_DETAIL = 500
ACTIONS = (
    "ack",
    "silence_create",
    "silence_expire",
    "silence_edit",
    "sign_in",
    "sign_out",
    "token_issue",
    "token_revoke",
    "refused",
    "stacks_capture",
)


@dataclass(frozen=True)
class AuditQuery:
    person: str | None = None  # exactly this actor name
    run: Sequence[str] = ()  # any of these run ids
    action: str | None = None
    outcome: str | None = None
    since: float | None = None
    until: float | None = None
    limit: int = 200


def record(
    s: Session,
    *,
    at: float,
    actor: str,
    role: str | None,
    via: str,
    door: str,
    action: str,
    target: str,
    outcome: str = "done",
    run_id: str | None = None,
    detail: str = "",
) -> AuditEvent:
    row = AuditEvent(
        at=at,
        actor=actor[:200],
        role=role,
        via=via,
        door=door,
        action=action,
        target=target[:300],
        run_id=run_id,
        outcome=outcome,
        detail=detail[:MAX_DETAIL],
    )
    s.add(row)
    return row


def find(s: Session, q: AuditQuery) -> list[AuditEvent]:
    """Newest first."""
    stmt = select(AuditEvent)
    if q.person is not None:
        stmt = stmt.where(AuditEvent.actor == q.person)
    if q.run:
        stmt = stmt.where(AuditEvent.run_id.in_(list(q.run)))
    if q.action is not None:
        stmt = stmt.where(AuditEvent.action == q.action)
    if q.outcome is not None:
        stmt = stmt.where(AuditEvent.outcome == q.outcome)
    if q.since is not None:
        stmt = stmt.where(AuditEvent.at >= q.since)
    if q.until is not None:
        stmt = stmt.where(AuditEvent.at < q.until)
    return list(s.scalars(stmt.order_by(AuditEvent.at.desc(), AuditEvent.id.desc()).limit(q.limit)))
