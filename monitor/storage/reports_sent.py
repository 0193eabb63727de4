"""The scheduled reports' ledger (``reports_sent``): each schedule's period is claimed by one replica.

:func:`claim` inserts the row (``ON CONFLICT DO NOTHING``: of two replicas at once, one wins), or takes
over a claim that was never marked sent and is older than ``stale`` (its replica died while sending,
or the send failed: it is tried again). :func:`mark_sent` closes it for good.
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from monitor.storage.models import ReportSent


def claim(s: Session, schedule: str, period_start: float, worker: str, now: float, stale: float) -> bool:
    dialect = postgresql if s.get_bind().dialect.name == "postgresql" else sqlite
    stmt = (
        dialect.insert(ReportSent)
        .values(schedule=schedule, period_start=period_start, claimed_by=worker, claimed_at=now)
        .on_conflict_do_nothing(index_elements=["schedule", "period_start"])
        .returning(ReportSent.schedule)
    )
    if s.execute(stmt).first() is not None:  # (rowcount is -1 here on PostgreSQL: it is not asked)
        return True
    taken = s.execute(
        update(ReportSent)
        .where(
            ReportSent.schedule == schedule,
            ReportSent.period_start == period_start,
            ReportSent.sent_at.is_(None),
            ReportSent.claimed_at < now - stale,
        )
        .values(claimed_by=worker, claimed_at=now)
        .returning(ReportSent.schedule)
    )
    return taken.first() is not None


def mark_sent(s: Session, schedule: str, period_start: float, worker: str, now: float) -> None:
    s.execute(
        update(ReportSent)
        .where(ReportSent.schedule == schedule, ReportSent.period_start == period_start)
        .values(sent_at=now, error=None, claimed_by=worker)
    )


def mark_failed(s: Session, schedule: str, period_start: float, error: str) -> None:
    s.execute(
        update(ReportSent)
        .where(ReportSent.schedule == schedule, ReportSent.period_start == period_start)
        .values(error=error[:2000])
    )


def sent(s: Session, schedule: str) -> list[ReportSent]:
    q = select(ReportSent).where(ReportSent.schedule == schedule).order_by(ReportSent.period_start)
    return list(s.scalars(q))
