"""The goodput ledger in SQL: the engine adds each poll's slots and events; reports sum them.

Everything a report reads is aggregated here, in the database (``GROUP BY``), or read for the period
only: memory does not grow with the number of samples a run logged.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from monitor.storage.models import GoodputEvent, GoodputSlot

MAX_INT32 = 2**31 - 1


def add(s: Session, run_id: str, slots: dict[tuple[float, str], float], events: list[dict[str, Any]]) -> None:
    """Add a poll's drained ledger (``monitor.runs.goodput_ledger.Ledger.drain``) to the tables."""
    if slots:
        dialect = postgresql if s.get_bind().dialect.name == "postgresql" else sqlite
        rows = [{"run_id": run_id, "slot": k[0], "bucket": k[1], "seconds": v} for k, v in slots.items()]
        stmt = dialect.insert(GoodputSlot).values(rows)
        stmt = stmt.on_conflict_do_update(
            index_elements=["run_id", "slot", "bucket"],
            set_={"seconds": GoodputSlot.seconds + stmt.excluded.seconds},
        )
        s.execute(stmt)
    for e in events:
        s.add(
            GoodputEvent(
                run_id=run_id,
                kind=e["kind"],
                start=e["start"],
                end=e["end"],
                seconds_lost=e["seconds_lost"],
                step=e.get("step"),
                before_step=e.get("before_step"),
                # an INTEGER column (32 bits on PostgreSQL): a rewind of 2**40 steps is held as the cap
                steps_redone=min(max(int(e.get("steps_redone") or 0), 0), MAX_INT32),
            )
        )


def bucket_sums(s: Session, run_ids: list[str], start: float, end: float) -> dict[str, dict[str, float]]:
    """run -> bucket -> seconds in the slots of ``[start, end)``."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    if not run_ids:
        return out
    q = (
        select(GoodputSlot.run_id, GoodputSlot.bucket, func.sum(GoodputSlot.seconds))
        .where(GoodputSlot.run_id.in_(run_ids), GoodputSlot.slot >= start, GoodputSlot.slot < end)
        .group_by(GoodputSlot.run_id, GoodputSlot.bucket)
    )
    for run_id, bucket, seconds in s.execute(q):
        out[run_id][bucket] = float(seconds or 0.0)
    return out


def slot_series(s: Session, run_ids: list[str], start: float, end: float, width: float) -> list[tuple]:
    """(run, bucket, bar start, seconds) summed into bars of ``width`` seconds, for the pictures."""
    if not run_ids:
        return []
    bar = (func.floor((GoodputSlot.slot - start) / width) * width + start).label("bar")
    q = (
        select(GoodputSlot.run_id, GoodputSlot.bucket, bar, func.sum(GoodputSlot.seconds))
        .where(GoodputSlot.run_id.in_(run_ids), GoodputSlot.slot >= start, GoodputSlot.slot < end)
        .group_by(GoodputSlot.run_id, GoodputSlot.bucket, bar)
    )
    return [(r, b, float(x), float(v or 0.0)) for r, b, x, v in s.execute(q)]


def events(
    s: Session, run_ids: list[str], start: float, end: float, kinds: tuple[str, ...] | None = None
) -> list[GoodputEvent]:
    """The events that overlap ``[start, end)``, oldest first."""
    if not run_ids:
        return []
    q = select(GoodputEvent).where(
        GoodputEvent.run_id.in_(run_ids), GoodputEvent.end > start, GoodputEvent.start < end
    )
    if kinds is not None:
        q = q.where(GoodputEvent.kind.in_(kinds))
    return list(s.scalars(q.order_by(GoodputEvent.start)))


def pause_near(s: Session, run_id: str, t: float, slack: float) -> GoodputEvent | None:
    """The pause (checkpoint save, eval) of ``run_id`` that ``t`` fell in, give or take ``slack``."""
    q = select(GoodputEvent).where(
        GoodputEvent.run_id == run_id,
        GoodputEvent.kind == "pause",
        GoodputEvent.start <= t + slack,
        GoodputEvent.end >= t - slack,
    )
    return s.scalars(q.limit(1)).first()


def first_slot(s: Session, run_ids: list[str]) -> float | None:
    """The oldest slot of these runs: periods before it were not accounted."""
    if not run_ids:
        return None
    v = s.scalar(select(func.min(GoodputSlot.slot)).where(GoodputSlot.run_id.in_(run_ids)))
    return float(v) if v is not None else None
