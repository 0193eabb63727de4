"""Alert history: every alert instance that was active in a time range, newest start first, a page at
a time (keyset paging on (active_at, id), so a page is as fast deep in the history as at its top, and
alerts written meanwhile neither repeat nor skip entries)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from monitor.storage.models import Alert
from monitor.storage.views import ACTIVE_STATES


@dataclass(frozen=True)
class HistoryQuery:
    start: float | None = None  # active at some time at or after this (epoch seconds)
    end: float | None = None  # ... and started at or before this
    rules: Sequence[str] = ()
    runs: Sequence[str] | None = None  # None: every run
    state: str | None = None  # "active" (pending or firing), pending, firing, resolved
    severity: str | None = None
    after: tuple[float, int] | None = None  # the (active_at, id) of the last entry of the page before


def history_page(
    session: Session, q: HistoryQuery, limit: int
) -> tuple[list[Alert], tuple[float, int] | None]:
    """One page of ``q``; and the key of its last entry when more follow (the next page's ``after``)."""
    stmt = select(Alert)
    if q.start is not None:  # still open, or ended at or after the start
        stmt = stmt.where(or_(Alert.resolved_at.is_(None), Alert.resolved_at >= q.start))
    if q.end is not None:
        stmt = stmt.where(Alert.active_at <= q.end)
    if q.rules:
        stmt = stmt.where(Alert.rule.in_(list(q.rules)))
    if q.runs is not None:
        stmt = stmt.where(Alert.run_id.in_(list(q.runs)))
    if q.state == "active":
        stmt = stmt.where(Alert.state.in_(ACTIVE_STATES))
    elif q.state:
        stmt = stmt.where(Alert.state == q.state)
    if q.severity:
        stmt = stmt.where(Alert.severity == q.severity)
    if q.after is not None:
        at, last_id = q.after
        stmt = stmt.where(or_(Alert.active_at < at, and_(Alert.active_at == at, Alert.id < last_id)))
    stmt = stmt.order_by(Alert.active_at.desc(), Alert.id.desc()).limit(limit + 1)
    rows = list(session.scalars(stmt))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, ((rows[-1].active_at, rows[-1].id) if more and rows else None)
