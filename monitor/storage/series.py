"""Bounded chart series: each (run, metric) keeps at most ``max_buckets`` buckets, whatever the run's length.

Points fold into buckets of ``width`` x-units (steps, or seconds for step-less metrics). When a series
outgrows its budget the width doubles and neighbouring buckets merge. Each bucket keeps min and max,
so a one-step spike stays visible however far the series is compacted.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select, tuple_
from sqlalchemy.orm import Session

from monitor.storage.attempt_models import SupersededBucket
from monitor.storage.models import SeriesBucket, SeriesMeta

MAX_BUCKETS = 512
MAX_SUPERSEDED = MAX_BUCKETS  # an earlier attempt's buckets kept per series (series_attempts)
TIME_WIDTH = 15.0  # seconds: the first bucket width of a step-less (time axis) series


@dataclass(slots=True)  # made per metric and sample: no __dict__ each
class Point:
    x: float
    value: float
    t: float


def _fold(b: SeriesBucket, p: Point) -> None:
    if math.isfinite(p.value):
        b.min = p.value if b.min is None else min(b.min, p.value)
        b.max = p.value if b.max is None else max(b.max, p.value)
        b.sum = (b.sum or 0.0) + p.value
        b.count = (b.count or 0) + 1
    else:
        b.nonfinite = (b.nonfinite or 0) + 1
    if b.t_last is None or p.t >= b.t_last:
        b.last, b.t_last = (p.value if math.isfinite(p.value) else None), p.t


def ingest(
    session: Session,
    run_id: str,
    metric: str,
    points: Iterable[Point],
    axis: str,
    max_buckets: int = MAX_BUCKETS,
) -> None:
    ingest_run(session, run_id, {metric: (axis, list(points))}, max_buckets)


def ingest_run(
    session: Session,
    run_id: str,
    series: Mapping[str, tuple[str, list[Point]]],
    max_buckets: int = MAX_BUCKETS,
) -> None:
    """Fold one poll's points of every metric of a run: two queries, whatever the number of metrics."""
    series = {m: v for m, v in series.items() if v[1]}
    if not series:
        return
    metas = {
        m.metric: m
        for m in session.scalars(
            select(SeriesMeta).where(SeriesMeta.run_id == run_id, SeriesMeta.metric.in_(list(series)))
        )
    }
    groups: dict[str, dict[float, list[Point]]] = {}
    for metric, (axis, points) in series.items():
        meta = metas.get(metric)
        if meta is None:
            meta = metas[metric] = SeriesMeta(
                run_id=run_id,
                metric=metric,
                axis=axis,
                width=1.0 if axis == "step" else TIME_WIDTH,
                buckets=0,
                points=0,
            )
            session.add(meta)
        g: dict[float, list[Point]] = defaultdict(list)
        for p in points:
            g[math.floor(p.x / meta.width) * meta.width].append(p)
        groups[metric] = g
    # The buckets this poll touches sit at the end of each series: read from the smallest x0 on, per axis.
    wanted = []
    for axis in ("step", "time"):
        names = [m for m, g in groups.items() if metas[m].buckets and metas[m].axis == axis]
        if names:
            low = min(min(groups[m]) for m in names)
            wanted.append(and_(SeriesBucket.metric.in_(names), SeriesBucket.x0 >= low))
    existing = {
        (b.metric, b.x0): b
        for b in (
            session.scalars(select(SeriesBucket).where(SeriesBucket.run_id == run_id, or_(*wanted)))
            if wanted
            else ()
        )
    }
    fresh: list[_Bucket] = []
    for metric, g in groups.items():
        meta = metas[metric]
        t = min(p.t for p in series[metric][1])
        old = stale({x0: b for (m, x0), b in existing.items() if m == metric}, min(g), t)
        for b in old:
            session.expunge(existing.pop((metric, b.x0)))
        if old:
            meta.buckets -= len(old)
            retire(session, run_id, metric, meta.width, [{c: getattr(b, c) for c in ROW} for b in old], t)
        for x0, pts in g.items():
            b = existing.get((metric, x0))
            if b is None:
                b = _Bucket(run_id=run_id, metric=metric, x0=x0)
                fresh.append(b)
                meta.buckets += 1
            for p in pts:
                _fold(b, p)
        meta.points += len(series[metric][1])
    if fresh:  # one multi-row INSERT instead of an ORM object per bucket
        session.execute(insert(SeriesBucket), [b.row() for b in fresh])
    for meta in metas.values():
        if meta.buckets > max_buckets:
            session.flush()
            _compact(session, meta, max_buckets)


ROW = ("run_id", "metric", "x0", "min", "max", "sum", "count", "nonfinite", "last", "t_last")


def stale(buckets: Mapping[float, Any], x0: float, t: float) -> list[Any]:
    """A rewind: points from bucket ``x0`` on, the earliest logged at ``t``, while buckets beyond ``x0``
    hold points logged before ``t`` (the run went back and logs those steps again). Returns the
    buckets from ``x0`` on logged before ``t`` (``buckets``: every stored one from ``x0`` on, by x0),
    to move aside (``retire``) before the redone points fold in; else none."""
    old = [b for x, b in buckets.items() if x >= x0 and b.t_last is not None and b.t_last < t]
    return old if any(b.x0 > x0 for b in old) else []


def retire(s: Session, run_id: str, metric: str, width: float, rows: list[dict[str, Any]], at: float) -> None:
    """Move buckets (``ROW`` dicts) of the live series to its earlier attempts (``series_superseded``),
    as of the redone point at ``at``; the oldest attempts go beyond ``MAX_SUPERSEDED`` buckets."""
    sb, sup = SeriesBucket, SupersededBucket
    s.execute(
        delete(sb).where(sb.run_id == run_id, sb.metric == metric, sb.x0.in_([r["x0"] for r in rows])),
        execution_options={"synchronize_session": False},
    )
    # t_last to the microsecond, as series_buckets stores it (EpochTime), whichever path read it
    t = [None if r["t_last"] is None else round(float(r["t_last"]), 6) for r in rows]
    s.execute(
        insert(sup), [dict(r, superseded_at=at, width=width, t_last=x) for r, x in zip(rows, t, strict=True)]
    )
    where = (sup.run_id == run_id, sup.metric == metric)
    kept = s.scalar(select(func.count()).select_from(sup).where(*where)) or 0
    if kept > MAX_SUPERSEDED:
        oldest = select(sup.superseded_at, sup.x0).where(*where).order_by(sup.superseded_at, sup.x0)
        gone = [tuple(r) for r in s.execute(oldest.limit(kept - MAX_SUPERSEDED))]
        s.execute(
            delete(sup).where(*where, tuple_(sup.superseded_at, sup.x0).in_(gone)),
            execution_options={"synchronize_session": False},
        )


@dataclass(slots=True)  # kept per series in memory for a few polls: no __dict__ for the collector
class _Bucket:
    run_id: str
    metric: str
    x0: float
    min: float | None = None
    max: float | None = None
    sum: float = 0.0
    count: int = 0
    nonfinite: int = 0
    last: float | None = None
    t_last: float | None = None

    def row(self) -> dict:
        return {
            "run_id": self.run_id,
            "metric": self.metric,
            "x0": self.x0,
            "min": self.min,
            "max": self.max,
            "sum": self.sum,
            "count": self.count,
            "nonfinite": self.nonfinite,
            "last": self.last,
            "t_last": self.t_last,
        }


def _compact(session: Session, meta: SeriesMeta, max_buckets: int) -> None:
    rows = list(
        session.scalars(
            select(SeriesBucket).where(SeriesBucket.run_id == meta.run_id, SeriesBucket.metric == meta.metric)
        )
    )
    width = meta.width
    while True:
        width *= 2
        if len({math.floor(b.x0 / width) for b in rows}) <= max_buckets // 2 or width > 2**60:
            break
    merged: dict[float, SeriesBucket] = {}
    for b in sorted(rows, key=lambda r: r.x0):
        x0 = math.floor(b.x0 / width) * width
        m = merged.get(x0)
        if m is None:
            merged[x0] = SeriesBucket(
                run_id=b.run_id,
                metric=b.metric,
                x0=x0,
                min=b.min,
                max=b.max,
                sum=b.sum,
                count=b.count,
                nonfinite=b.nonfinite,
                last=b.last,
                t_last=b.t_last,
            )
            continue
        m.min = b.min if m.min is None else (m.min if b.min is None else min(m.min, b.min))
        m.max = b.max if m.max is None else (m.max if b.max is None else max(m.max, b.max))
        m.sum += b.sum
        m.count += b.count
        m.nonfinite += b.nonfinite
        if b.t_last is not None and (m.t_last is None or b.t_last >= m.t_last):
            m.last, m.t_last = b.last, b.t_last
    for b in rows:
        session.expunge(b)
    session.execute(
        delete(SeriesBucket).where(SeriesBucket.run_id == meta.run_id, SeriesBucket.metric == meta.metric),
        execution_options={"synchronize_session": False},
    )
    session.add_all(merged.values())
    meta.width = width
    meta.buckets = len(merged)


@dataclass(frozen=True)
class BucketView:
    x0: float
    x1: float
    min: float | None
    max: float | None
    mean: float | None
    last: float | None
    count: int
    nonfinite: int
    t: float | None = None  # when the newest point folded in arrived (for charts against time)


def read_series(session: Session, run_id: str, metric: str) -> tuple[str, list[BucketView]]:
    meta = session.get(SeriesMeta, (run_id, metric))
    if meta is None:
        return "step", []
    sb = SeriesBucket
    rows = session.execute(  # plain rows, not ORM objects: up to 512 of them for a notification's plot
        select(sb.x0, sb.min, sb.max, sb.sum, sb.count, sb.last, sb.nonfinite, sb.t_last)
        .where(sb.run_id == run_id, sb.metric == metric)
        .order_by(sb.x0)
    )
    return meta.axis, [  # by position: a row's ``count`` is a tuple method, not the column
        BucketView(x0, x0 + meta.width, lo, hi, (total / n) if n else None, last, n, nonfinite, t_last)
        for x0, lo, hi, total, n, last, nonfinite, t_last in rows
    ]


def metrics_of(session: Session, run_id: str) -> list[str]:
    return list(
        session.scalars(
            select(SeriesMeta.metric).where(SeriesMeta.run_id == run_id).order_by(SeriesMeta.metric)
        )
    )


def progress_points(session: Session, run_id: str) -> list[tuple[float, float]]:
    """(when, step) of every bucket of the run's step-indexed series with the most such buckets (the
    first by name on a tie): the run's progress, in one query rather than one per metric."""
    rows = session.execute(
        select(SeriesBucket.metric, SeriesBucket.t_last, SeriesBucket.x0)
        .join(
            SeriesMeta,
            and_(SeriesMeta.run_id == SeriesBucket.run_id, SeriesMeta.metric == SeriesBucket.metric),
        )
        .where(SeriesBucket.run_id == run_id, SeriesMeta.axis == "step", SeriesBucket.t_last.is_not(None))
        .order_by(SeriesBucket.metric, SeriesBucket.x0)
    )
    by_metric: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for metric, t, x0 in rows:
        by_metric[metric].append((t, x0))
    best: list[tuple[float, float]] = []
    for points in by_metric.values():
        if len(points) > len(best):
            best = points
    return best
