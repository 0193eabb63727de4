"""Silences in the database: create (validated), list, expire. Used by the CLI, the API and Slack actions."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.silences import SilenceSpec
from monitor.storage.models import Silence


def create(
    s: Session,
    matchers: Sequence[str],
    starts_at: float,
    ends_at: float,
    created_by: str,
    comment: str,
    now: float,
) -> Silence:
    """Raises ValueError with a clear message for a bad matcher or window."""
    SilenceSpec.parse(0, matchers, starts_at, ends_at)  # validates
    if not created_by.strip():
        raise ValueError("say who creates the silence (created_by)")
    row = Silence(
        matchers={"matchers": list(matchers)},
        starts_at=starts_at,
        ends_at=ends_at,
        created_by=created_by.strip(),
        comment=comment,
        created_at=now,
    )
    s.add(row)
    s.flush()
    return row


def list_silences(s: Session, now: float, include_expired: bool = False) -> list[Silence]:
    q = select(Silence).order_by(Silence.ends_at.desc())
    if not include_expired:
        q = q.where(Silence.ends_at > now)
    return list(s.scalars(q))


def expire(s: Session, silence_id: int, now: float) -> Silence | None:
    row = s.get(Silence, silence_id)
    if row is None:
        return None
    if row.ends_at > now:
        row.ends_at = max(now, row.starts_at)
    return row


def state_of(row: Silence, now: float) -> str:
    if row.ends_at <= now:
        return "expired"
    return "active" if row.starts_at <= now else "pending"
