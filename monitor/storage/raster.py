"""The fleet raster of a run: per fleet metric, members x time columns, each cell min, max and mean.

Bounded however long the run and however many members:

- fine columns (tier 0), one per ``step`` of the source (15 s), for the last ``recent`` (1 h): what
  alerts compare members over, and what a zoom on the last hour shows;
- coarse columns (tier 1) before that, ``width`` seconds each: when there are more than ``columns``
  (256) of them the width doubles and neighbours merge, so a week-long run keeps ~128..256 columns;
- at most ``max_members`` rows (4,096): members past that are not stored (logged).

A column is one row holding every member (``cells.Cells``, 16 bytes a member), so one poll writes a
row per metric and new timestamp, not one per member. Fine columns move to the coarse tier in batches
(once every ~``recent / 10``), so most polls write only their new columns.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from monitor.fleet.frame import FleetFrame, Member
from monitor.storage.cells import Cells
from monitor.storage.models import FleetColumn, FleetRaster

log = logging.getLogger(__name__)

FINE, COARSE = 0, 1
_WARNED: set[tuple[str, str, int]] = set()  # members over the limit: said once per run, metric and count


@dataclass(frozen=True)
class RasterLimits:
    recent: float = 3600.0  # seconds of fine columns kept
    columns: int = 256  # coarse columns kept (at most; halves when exceeded)
    max_members: int = 4096


def members_of(meta: FleetRaster) -> list[Member]:
    return [(str(h), None if d is None else str(d)) for h, d in meta.members or []]


def ingest(session: Session, run_id: str, frames: Sequence[FleetFrame], limits: RasterLimits) -> int:
    """Fold one poll's frames into the run's rasters. Returns the columns written."""
    frames = [f for f in frames if not f.empty]
    if not frames:
        return 0
    names = sorted({f.metric for f in frames})
    metas = {
        m.metric: m
        for m in session.scalars(
            select(FleetRaster).where(FleetRaster.run_id == run_id, FleetRaster.metric.in_(names))
        )
    }
    plans: list[tuple[FleetRaster, FleetFrame, list[int]]] = []
    for f in frames:
        meta = metas.get(f.metric)
        if meta is None:
            meta = metas[f.metric] = FleetRaster(
                run_id=run_id, metric=f.metric, members=[], step=f.step, width=f.step,
                fine=0, coarse=0, level=0.0, label=f.label, unit=f.unit,
            )  # fmt: skip
            session.add(meta)
        meta.label, meta.unit, meta.device_word = f.label, f.unit, f.device_word
        plans.append((meta, f, _index(meta, f, limits.max_members)))
    low = min(math.floor(f.times[0] / metas[f.metric].step) * metas[f.metric].step for f in frames)
    existing = {
        (c.metric, c.x0): c
        for c in session.scalars(
            select(FleetColumn).where(
                FleetColumn.run_id == run_id,
                FleetColumn.metric.in_(names),
                FleetColumn.tier == FINE,
                FleetColumn.x0 >= low,
            )
        )
    }
    fresh: list[dict] = []
    for meta, f, index in plans:
        n = len(meta.members)
        rows = np.asarray(f.values, dtype=np.float64).reshape(len(f.members), len(f.times))
        at = np.asarray(index, dtype=np.int64)
        columns: dict[float, Cells] = {}
        for j, t in enumerate(f.times):
            x0 = math.floor(t / meta.step) * meta.step
            cells = columns.get(x0)
            if cells is None:
                row = existing.get((f.metric, x0))
                cells = columns[x0] = Cells.from_bytes(row.data, row.n) if row is not None else Cells(n)
                cells.grow(n)
            cells.fold(at, rows[:, j])
            meta.level = max(meta.level or 0.0, magnitude(rows[:, j]))
            meta.newest = t if meta.newest is None else max(meta.newest, t)
        for x0, cells in columns.items():
            row = existing.get((f.metric, x0))
            if row is None:
                fresh.append(
                    {"run_id": run_id, "metric": f.metric, "tier": FINE, "x0": x0, "width": meta.step,
                     "n": len(cells), "data": cells.to_bytes()}
                )  # fmt: skip
                meta.fine += 1
            else:
                row.n, row.data = len(cells), cells.to_bytes()
    if fresh:
        session.execute(insert(FleetColumn), fresh)
    for meta, _, _ in plans:
        keep = max(1, math.ceil(limits.recent / meta.step))
        if meta.fine > keep + max(1, keep // 10):
            session.flush()
            _age(session, meta, meta.fine - keep)
        if meta.coarse > limits.columns:
            session.flush()
            _compact(session, meta, limits.columns)
    return len(fresh)


def magnitude(values: np.ndarray) -> float:
    """``score.magnitude`` of one column: max(|median|, p95 - p5) of the members' values."""
    v = values[~np.isnan(values)]
    if not len(v):
        return 0.0
    p05, p50, p95 = np.percentile(v, [5, 50, 95])
    return float(max(abs(p50), p95 - p05))


def _index(meta: FleetRaster, frame: FleetFrame, cap: int) -> list[int]:
    """Row index of each of the frame's members in the raster (-1: over the member limit)."""
    known = {m: i for i, m in enumerate(members_of(meta))}
    members = list(meta.members or [])
    out, dropped = [], 0
    for m in frame.members:
        i = known.get(m)
        if i is None:
            if len(members) >= cap:
                out.append(-1)
                dropped += 1
                continue
            i = known[m] = len(members)
            members.append([m[0], m[1]])
        out.append(i)
    if len(members) != len(meta.members or []):
        meta.members = members  # a new list: the JSON column sees the change
    if dropped and (meta.run_id, meta.metric, dropped) not in _WARNED:
        _WARNED.add((meta.run_id, meta.metric, dropped))
        log.warning("fleet %s of run %s: %d members over the limit of %d are not stored (fleet.max_members)",
                    meta.metric, meta.run_id, dropped, cap)  # fmt: skip
    return out


def _age(session: Session, meta: FleetRaster, count: int) -> None:
    """Move the oldest ``count`` fine columns into the coarse tier."""
    old = list(
        session.scalars(
            select(FleetColumn)
            .where(
                FleetColumn.run_id == meta.run_id, FleetColumn.metric == meta.metric, FleetColumn.tier == FINE
            )
            .order_by(FleetColumn.x0)
            .limit(count)
        )
    )
    if not old:
        meta.fine = 0
        return
    width = meta.width
    groups: dict[float, list[FleetColumn]] = defaultdict(list)
    for c in old:
        groups[math.floor(c.x0 / width) * width].append(c)
    coarse = {
        c.x0: c
        for c in session.scalars(
            select(FleetColumn).where(
                FleetColumn.run_id == meta.run_id,
                FleetColumn.metric == meta.metric,
                FleetColumn.tier == COARSE,
                FleetColumn.x0.in_(list(groups)),
            )
        )
    }
    n = len(meta.members or [])
    for x0, cols in groups.items():
        target = coarse.get(x0)
        cells = Cells.from_bytes(target.data, target.n) if target is not None else Cells(n)
        cells.grow(n)
        for c in cols:
            cells.merge(Cells.from_bytes(c.data, c.n))
        if target is None:
            session.add(
                FleetColumn(run_id=meta.run_id, metric=meta.metric, tier=COARSE, x0=x0, width=width,
                            n=len(cells), data=cells.to_bytes())
            )  # fmt: skip
            meta.coarse += 1
        else:
            target.n, target.data = len(cells), cells.to_bytes()
    for c in old:
        session.delete(c)
    meta.fine -= len(old)


def _compact(session: Session, meta: FleetRaster, limit: int) -> None:
    """Double the coarse width until at most half the limit is used; neighbours merge."""
    rows = list(
        session.scalars(
            select(FleetColumn).where(
                FleetColumn.run_id == meta.run_id,
                FleetColumn.metric == meta.metric,
                FleetColumn.tier == COARSE,
            )
        )
    )
    width = meta.width
    while len({math.floor(r.x0 / width) for r in rows}) > max(1, limit // 2) and width < 2**40:
        width *= 2
    n = len(meta.members or [])
    merged: dict[float, Cells] = {}
    for r in sorted(rows, key=lambda r: r.x0):
        x0 = math.floor(r.x0 / width) * width
        cells = merged.get(x0)
        if cells is None:
            cells = merged[x0] = Cells(n)
        cells.merge(Cells.from_bytes(r.data, r.n))
    for r in rows:
        session.expunge(r)
    session.execute(
        delete(FleetColumn).where(
            FleetColumn.run_id == meta.run_id, FleetColumn.metric == meta.metric, FleetColumn.tier == COARSE
        ),
        execution_options={"synchronize_session": False},
    )
    if merged:
        session.execute(
            insert(FleetColumn),
            [
                {"run_id": meta.run_id, "metric": meta.metric, "tier": COARSE, "x0": x0, "width": width,
                 "n": len(c), "data": c.to_bytes()}
                for x0, c in merged.items()
            ],
        )  # fmt: skip
    meta.width = width
    meta.coarse = len(merged)
