"""Reading the fleet raster (written by ``raster``): one metric's columns for the dashboard and the API,
every metric over an alert's window (one query), the recent columns a straggler track is rebuilt from."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from monitor.fleet.frame import Member
from monitor.storage.cells import Cells
from monitor.storage.models import FleetColumn, FleetRaster
from monitor.storage.raster import COARSE, FINE, members_of


@dataclass
class RasterView:
    metric: str
    label: str
    unit: str
    device_word: str | None
    members: list[Member]
    level: float
    spans: list[tuple[float, float]] = field(default_factory=list)  # each column's [x0, x1)
    columns: list[Cells] = field(default_factory=list)


def rasters_of(session: Session, run_id: str) -> list[FleetRaster]:
    return list(
        session.scalars(select(FleetRaster).where(FleetRaster.run_id == run_id).order_by(FleetRaster.metric))
    )


def _view(meta: FleetRaster) -> RasterView:
    return RasterView(
        meta.metric, meta.label, meta.unit, meta.device_word, members_of(meta), meta.level or 0.0
    )


def read(
    session: Session,
    run_id: str,
    metric: str,
    since: float | None = None,
    until: float | None = None,
    max_columns: int | None = None,
) -> RasterView | None:
    """The raster of one metric, oldest column first, at most ``max_columns`` columns (neighbours
    merged: min and max survive, means are weighted by their counts). None: no such raster."""
    meta = session.get(FleetRaster, (run_id, metric))
    if meta is None:
        return None
    view = _view(meta)
    q = select(FleetColumn).where(FleetColumn.run_id == run_id, FleetColumn.metric == metric)
    if since is not None:
        q = q.where(FleetColumn.x0 + FleetColumn.width > since)
    if until is not None:
        q = q.where(FleetColumn.x0 < until)
    rows = sorted(session.scalars(q), key=lambda r: (r.x0, r.tier))
    first_fine = min((r.x0 for r in rows if r.tier == FINE), default=math.inf)
    n = len(view.members)
    spans, cols = [], []
    for r in rows:
        x1 = r.x0 + r.width if r.tier == FINE else min(r.x0 + r.width, first_fine)
        if x1 <= r.x0:
            continue
        cells = Cells.from_bytes(r.data, r.n)
        cells.grow(n)
        spans.append((r.x0, x1))
        cols.append(cells)
    k = max(1, math.ceil(len(cols) / max_columns)) if max_columns else 1
    for i in range(0, len(cols), k):
        view.spans.append((spans[i][0], spans[min(i + k, len(spans)) - 1][1]))
        view.columns.append(cols[i] if k == 1 else Cells.merged(cols[i : i + k], n))
    return view


def window(session: Session, run_id: str, t0: float, t1: float) -> list[RasterView]:
    """Every fleet metric of the run over [t0, t1): one merged column each (the members' window
    means, mins and maxes). One query, whatever the number of metrics."""
    metas = rasters_of(session, run_id)
    if not metas:
        return []
    rows = session.scalars(
        select(FleetColumn).where(
            FleetColumn.run_id == run_id,
            FleetColumn.x0 < t1,
            FleetColumn.x0 + FleetColumn.width > t0,
            or_(FleetColumn.tier == FINE, and_(FleetColumn.tier == COARSE, FleetColumn.x0 >= t0)),
        )
    )
    by_metric: dict[str, list[FleetColumn]] = defaultdict(list)
    for r in rows:
        by_metric[r.metric].append(r)
    out = []
    for meta in metas:
        view = _view(meta)
        cols = by_metric.get(meta.metric, [])
        if cols:
            view.spans.append((min(c.x0 for c in cols), max(c.x0 + c.width for c in cols)))
            view.columns.append(
                Cells.merged((Cells.from_bytes(c.data, c.n) for c in cols), len(view.members))
            )
        out.append(view)
    return out


def fine_columns(
    session: Session, run_id: str, metric: str, since: float
) -> tuple[list[Member], list[tuple[float, list[float]]]]:
    """The members and fine columns of one metric from ``since`` on: (time, each member's mean), oldest
    first."""
    meta = session.get(FleetRaster, (run_id, metric))
    if meta is None:
        return [], []
    n = len(meta.members or [])
    rows = session.scalars(
        select(FleetColumn)
        .where(FleetColumn.run_id == run_id, FleetColumn.metric == metric, FleetColumn.tier == FINE)
        .where(FleetColumn.x0 >= since)
        .order_by(FleetColumn.x0)
    )
    return members_of(meta), [(r.x0, Cells.from_bytes(r.data, r.n).means(n)) for r in rows]


def stored_bytes(session: Session, run_id: str | None = None) -> int:
    q = select(func.coalesce(func.sum(func.length(FleetColumn.data)), 0))
    if run_id is not None:
        q = q.where(FleetColumn.run_id == run_id)
    return int(session.scalar(q) or 0)
