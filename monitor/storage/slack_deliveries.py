"""The Slack requests acted on over Socket Mode (``slack_deliveries``): claimed once across replicas.

:func:`claim` is one ``INSERT ... ON CONFLICT DO NOTHING`` on the request's key, in the transaction
that then acts on it. On PostgreSQL a second replica claiming the same key waits for the first one's
transaction: if it commits, the second finds the key taken (and answers with :func:`reply_of`); if it
rolls back (the action failed), the second claims it and acts. On SQLite (one process) the same
statement within one transaction at a time.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from monitor.storage.models import SlackDelivery

KEEP = 86_400.0  # a day: Slack re-delivers an unacknowledged envelope within minutes


def claim(s: Session, key: str, *, envelope_id: str, kind: str, actor: str, now: float, worker: str) -> bool:
    """Take ``key`` for this transaction: True if nobody had, False if it was acted on already."""
    dialect = postgresql if s.get_bind().dialect.name == "postgresql" else sqlite
    stmt = (
        dialect.insert(SlackDelivery)
        .values(
            key=key,
            envelope_id=envelope_id,
            kind=kind,
            actor=actor[:200],
            received_at=now,
            handled_by=worker[:200],
            reply=None,
        )
        .on_conflict_do_nothing(index_elements=["key"])
        .returning(SlackDelivery.id)
    )
    return s.execute(stmt).scalar() is not None


def record_reply(s: Session, key: str, reply: dict[str, Any]) -> None:
    """What the person was answered, for a duplicate of the request to be answered the same."""
    row = s.scalar(select(SlackDelivery).where(SlackDelivery.key == key))
    if row is not None:
        row.reply = reply


def reply_of(s: Session, key: str) -> dict[str, Any] | None:
    return s.scalar(select(SlackDelivery.reply).where(SlackDelivery.key == key))


def forget_before(s: Session, t: float) -> int:
    """Drop the rows received before ``t`` (their requests will not come again)."""
    res = s.execute(
        delete(SlackDelivery)
        .where(SlackDelivery.received_at < t)
        .execution_options(synchronize_session=False)
    )
    return res.rowcount or 0
