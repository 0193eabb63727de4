"""The goodput ledger in SQL: the engine adds each poll's slots and events; reports sum them.

Everything a report reads is aggregated here, in the database (``GROUP BY``), or read for the period
only: memory does not grow with the number of samples a run logged.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import bindparam, delete, func, insert, or_, select
from sqlalchemy.orm import Session, sessionmaker

from monitor.storage import bulk
from monitor.storage.models import GoodputEvent, GoodputSlot

log = logging.getLogger(__name__)
MAX_INT32 = 2**31 - 1


def add(s: Session, run_id: str, slots: dict[tuple[float, str], float], events: list[dict[str, Any]]) -> None:
    """Add a poll's drained ledger (``monitor.runs.goodput_ledger.Ledger.drain``) to the tables."""
    writes = GoodputWrites()
    writes.add(run_id, slots, events)
    writes.flush(s)


@dataclass
class GoodputWrites:
    """The drained ledgers of a batch's runs, written at its end in two statements (not two per run):
    seconds of the same (run, slot, bucket) summed here, then added to the stored ones."""

    slots: dict[tuple[str, float, str], float] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)

    def add(self, run_id: str, slots: dict[tuple[float, str], float], events: list[dict[str, Any]]) -> None:
        mine = self.slots
        for (slot, bucket), seconds in slots.items():
            key = (run_id, slot, bucket)
            mine[key] = mine.get(key, 0.0) + seconds
        self.events.extend(_event_row(run_id, e) for e in events)

    def flush(self, s: Session) -> None:
        if self.slots:
            keys = ("run_id", "slot", "bucket")
            rows = [dict(zip(keys, k, strict=True), seconds=v) for k, v in self.slots.items()]
            bulk.upsert(s, GoodputSlot.__table__, rows, keys, (), add=("seconds",), unique=True)
        if self.events:
            s.execute(insert(GoodputEvent), self.events)
        self.clear()

    def clear(self) -> None:
        self.slots.clear()
        self.events.clear()


def _event_row(run_id: str, e: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "kind": e["kind"],
        "start": e["start"],
        "end": e["end"],
        "seconds_lost": e["seconds_lost"],
        "step": e.get("step"),
        "before_step": e.get("before_step"),
        # an INTEGER column (32 bits on PostgreSQL): a rewind of 2**40 steps is held as the cap
        "steps_redone": min(max(int(e.get("steps_redone") or 0), 0), MAX_INT32),
    }


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


HOUR, DAY = 3600.0, 86400.0
COMPACT_EVERY = HOUR
COMPACT = (
    (DAY, 7 * DAY),
    (HOUR, DAY),
)  # (cell width, from what age): a day's row after a week, an hour's after a day


def compact(s: Session, now: float, offset: float = 0.0) -> int:
    """Merge old slots into coarser rows: older than a day into one row an hour, older than a week into
    one a day (``COMPACT``), each at the start of its cell; the seconds of each run and bucket are kept
    (summed), so a period made of whole cells sums to what it did. ``offset``: seconds east of UTC of
    the reports' time zone, so that the cells are its hours and days (its midnights stay cell
    boundaries). Returns the rows removed. The table then grows by a row a day and bucket per run,
    not 96."""
    removed = 0
    col = GoodputSlot.slot
    for width, age in COMPACT:
        cutoff = math.floor((now - age + offset) / width) * width - offset  # whole cells only
        cell = (func.floor((col + offset) / width) * width - offset).label("cell")
        n = func.count()
        groups = list(
            s.execute(
                select(
                    GoodputSlot.run_id, GoodputSlot.bucket, cell, func.sum(GoodputSlot.seconds), func.count()
                )
                .where(col < cutoff)
                .group_by(GoodputSlot.run_id, GoodputSlot.bucket, cell)
                .having(or_(n > 1, func.min(col) != cell))
            )
        )
        if not groups:
            continue
        s.connection().execute(  # (core: an ORM DELETE takes no list of parameters)
            delete(GoodputSlot.__table__)
            .where(GoodputSlot.run_id == bindparam("r"), GoodputSlot.bucket == bindparam("b"))
            .where(col >= bindparam("lo"), col < bindparam("hi")),
            [{"r": r, "b": b, "lo": float(c), "hi": float(c) + width} for r, b, c, _, _ in groups],
        )
        rows = [{"run_id": r, "slot": float(c), "bucket": b, "seconds": float(v)} for r, b, c, v, _ in groups]
        s.execute(insert(GoodputSlot), rows)
        removed += sum(n for *_, n in groups) - len(groups)
    return removed


def compact_now(sessions: sessionmaker[Session], now: float, zone: str = "UTC") -> int:
    """``compact`` in a transaction of its own, in the cells of ``zone`` (the reports' time zone) as it
    is at ``now``; the scheduler runs it every ``COMPACT_EVERY`` seconds."""
    offset = datetime.fromtimestamp(now, ZoneInfo(zone)).utcoffset() or timedelta(0)
    with sessions.begin() as s:
        removed = compact(s, now, offset.total_seconds())
    if removed:
        log.info("goodput ledger: %d old slots merged into hours and days", removed)
    return removed
