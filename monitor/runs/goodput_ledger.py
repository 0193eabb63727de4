"""Where a run's wall time went, slot by slot, for reports over any period (``monitor.reports``).

The goodput tracker (``monitor.runs.goodput``) classifies wall time as it learns how each stretch ended
(a stall is known to be one only when the next step comes). Each time it does, it hands the stretch
``[a, b)`` and the seconds it put in each bucket to :meth:`Ledger.account`, which lays them out in
time and cuts them at ``SLOT`` boundaries: lost time first (the stall began at the last step), the
productive rest at the end (the step that ended the gap did compute), and the spans herowatch could not
see (source blind) where they were. Lost work (``rework``, steps
redone after a rewind) is no stretch of time: it moves from productive to rework in the slot where the
rewind was seen. Incidents and pauses (checkpoint saves, evals) are kept as events.

The engine drains the ledger after every poll and adds it to the ``goodput_slots`` and
``goodput_events`` tables in the poll's transaction, so a report over a past week sums rows instead of
replaying samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

SLOT = 900.0  # seconds: report periods are cut at quarter hours (any time zone's midnight is one)
SPREAD = (
    "down",
    "restarting",
    "startup",
    "stalled",
    "checkpoint",
    "evaluation",
    "paused",
    "data_loading",
)  # laid out from the start of a stretch, in this order (less its source-blind spans), productive last


def slot_of(t: float) -> float:
    return math.floor(t / SLOT) * SLOT


class Ledger:
    def __init__(self) -> None:
        self.slots: dict[tuple[float, str], float] = {}
        self.events: list[dict[str, Any]] = []

    def _add(self, bucket: str, a: float, b: float) -> None:
        while b - a > 1e-9:
            s = slot_of(a)
            end = min(b, s + SLOT)
            key = (s, bucket)
            self.slots[key] = self.slots.get(key, 0.0) + (end - a)
            a = end

    def _point(self, bucket: str, t: float, seconds: float) -> None:
        key = (slot_of(t), bucket)
        self.slots[key] = self.slots.get(key, 0.0) + seconds

    def account(
        self,
        a: float | None,
        b: float | None,
        deltas: dict[str, float],
        holes: Sequence[tuple[float, float]] = (),
    ) -> None:
        """The stretch ``[a, b)`` was classified: ``deltas`` are the seconds added to each bucket;
        ``holes``, the spans of it herowatch could not see (``source_blind``, laid where they were)."""
        if a is None or b is None:
            return
        if not holes:  # the common case: lost time from the start, in order, productive the rest
            pos = a
            for bucket in SPREAD:
                d = deltas.get(bucket, 0.0)
                if d > 1e-9:
                    self._add(bucket, pos, min(pos + d, b))
                    pos += d
            self._add("productive", pos, b)
        else:
            self._lay_out(a, b, deltas, holes)
        rework = deltas.get("rework", 0.0)
        if rework > 1e-9:
            self._point("rework", b, rework)
            self._point("productive", b, -rework)

    def _lay_out(
        self, a: float, b: float, deltas: dict[str, float], holes: Sequence[tuple[float, float]]
    ) -> None:
        """``account`` with source-blind spans: those where they were, the rest around them in order."""
        free: list[tuple[float, float]] = []
        pos = a
        for lo, hi in sorted((max(a, lo), min(b, hi)) for lo, hi in holes):
            if hi - max(lo, pos) <= 1e-9:
                continue
            lo = max(lo, pos)
            if lo > pos:
                free.append((pos, lo))
            self._add("source_blind", lo, hi)
            pos = hi
        if b > pos:
            free.append((pos, b))
        rest = iter(free)
        seg = next(rest, None)
        at = seg[0] if seg else b
        for bucket in (*SPREAD, "productive"):
            d = deltas.get(bucket, 0.0) if bucket != "productive" else float("inf")
            while d > 1e-9 and seg is not None:
                end = min(seg[1], at + d)
                if end <= at:  # less than the time's float resolution is left of it
                    break
                self._add(bucket, at, end)
                d -= end - at
                at = end
                if at >= seg[1] - 1e-12:
                    seg = next(rest, None)
                    at = seg[0] if seg else b

    def incident(self, inc: dict[str, Any], before_step: int | None) -> None:
        self.events.append(dict(inc, before_step=before_step))

    def pause(self, start: float, end: float, lost: float, step: int | None) -> None:
        self.events.append(
            {
                "kind": "pause",
                "start": start,
                "end": end,
                "seconds_lost": lost,
                "step": step,
                "before_step": step,
                "steps_redone": 0,
            }
        )

    def drain(self) -> tuple[dict[tuple[float, str], float], list[dict[str, Any]]]:
        slots, events = self.slots, self.events
        self.slots, self.events = {}, []
        return slots, events
