"""Chart series written from memory: the engine keeps, per (run, metric), the series' bookkeeping and
its newest buckets, folds each poll's points into them, and hands back only the rows that changed, to
be written for many runs at once (``bulk.upsert``). The database is read only for what memory does not
hold: a run's series the first time it is polled in this process, or points older than the buckets
kept (a rewind). Buckets fold exactly as ``series.ingest_run`` does; compaction is shared. A rewind's
redone steps do not fold into the buckets of their first attempt: those move aside first
(``series_attempts``), so the chart keeps both.

A series grown past its bound is compacted in the batch that grew it, a run's series at once
(``series_compact``), at most ``COMPACT_PER_BATCH`` a batch: runs of a sweep started together grow past
it in the same poll, and their 20,000 series (1,000 runs) would hold the writer, and every poll waiting
on it, for most of a minute. The others wait for their next poll, a bucket or two over the bound."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import reduce
from itertools import islice, repeat
from math import floor, isfinite
from operator import add, attrgetter, le, mul, truediv

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from monitor.storage import bulk
from monitor.storage.models import SeriesBucket, SeriesMeta
from monitor.storage.series import MAX_BUCKETS, TIME_WIDTH, Point, _Bucket, _fold, retire, stale
from monitor.storage.series_compact import compact_many

BULK = 8  # points of a series in a poll from which they fold as whole lists (``_fold_points``)
KEEP = 2  # newest buckets kept in memory per series (a poll touches one or two; older ones are read)
META_EVERY = 4  # a series' bookkeeping row is written at least every this many polls that changed it
COMPACT_PER_BATCH = 200  # series compacted in one batch at most (~2 ms each on PostgreSQL)
BUCKET_COLUMNS = ("min", "max", "sum", "count", "nonfinite", "last", "t_last")
META_COLUMNS = ("axis", "width", "buckets", "points")
BUCKET_ROW = ("run_id", "metric", "x0", *BUCKET_COLUMNS)
META_ROW = ("run_id", "metric", *META_COLUMNS)
_bucket_row = attrgetter(*BUCKET_ROW)  # a bucket's row as a tuple, in C (no dict a row: many a batch)
_meta_row = attrgetter(*META_ROW)
_x, _value, _t = attrgetter("x"), attrgetter("value"), attrgetter("t")


@dataclass(slots=True)  # one per run and metric: no __dict__ each
class _Series:
    run_id: str
    metric: str
    axis: str
    width: float
    buckets: int = 0
    points: int = 0
    tail: dict[float, _Bucket] = field(default_factory=dict)
    known_from: float = -math.inf  # every stored bucket at or after this x0 is in ``tail``
    unsaved: int = 0  # polls folded since the bookkeeping row was last handed to be written


@dataclass
class SeriesWrites:
    """The rows a batch changed: written by :meth:`flush`, at the end of the batch (or before a
    compaction, which reads the stored buckets)."""

    buckets: dict[tuple[str, str, float], _Bucket] = field(default_factory=dict)
    metas: dict[tuple[str, str], _Series] = field(default_factory=dict)
    compactions: int = 0  # series compacted in this batch (at most COMPACT_PER_BATCH)

    def add_meta(self, ser: _Series) -> None:
        self.metas[(ser.run_id, ser.metric)] = ser
        ser.unsaved = 0

    def flush(self, s: Session) -> None:
        keys = ("run_id", "metric", "x0")
        rows = list(map(_bucket_row, self.buckets.values()))  # one per key: ``buckets`` is keyed by it
        # typed: str keys, float figures, int counts (points are floats: ``runs_repo.fold_samples``)
        bulk.upsert(
            s, SeriesBucket.__table__, rows, keys, BUCKET_COLUMNS, unique=True, columns=BUCKET_ROW, typed=True
        )
        metas = list(map(_meta_row, self.metas.values()))
        bulk.upsert(
            s,
            SeriesMeta.__table__,
            metas,
            ("run_id", "metric"),
            META_COLUMNS,
            unique=True,
            columns=META_ROW,
            typed=True,
        )
        self.buckets.clear()
        self.metas.clear()


def _fold_points(ser: _Series, xs: list[float], points: list[Point], out: dict) -> None:
    """Fold a poll's points (at or after the buckets ``ser.tail`` holds, their x values ``xs``) into
    ``ser.tail`` exactly as ``series._fold`` does one by one; the touched buckets go to ``out``. The two
    common cases over whole lists, in C: every point a bucket of its own (a step's, narrow buckets), or
    every point in one bucket (wide buckets, points in time order); anything else point by point."""
    run_id, metric, w, tail = ser.run_id, ser.metric, ser.width, ser.tail
    n = len(points)
    x0s = list(map(mul, map(floor, map(truediv, xs, repeat(w, n))), repeat(w, n)))
    vs = list(map(_value, points))
    ts = list(map(_t, points))
    finite = all(map(isfinite, vs))
    first = x0s[0]
    if finite and n > 1 and x0s.count(first) == n and all(map(le, ts, islice(ts, 1, None))):
        b = tail.get(first)
        if b is None:  # made with its first point, as below
            v = vs[0]
            b = tail[first] = _Bucket(run_id, metric, first, v, v, 0.0 + v, 1, 0, v, ts[0])
            ser.buckets += 1
            vs, ts = vs[1:], ts[1:]
        lo, hi = min(vs), max(vs)  # the first of equal ones, as one by one (ties keep the older)
        b.min = lo if b.min is None or lo < b.min else b.min
        b.max = hi if b.max is None or hi > b.max else b.max
        b.sum = reduce(add, vs, b.sum or 0.0)  # in order, one addition at a time: the same float
        b.count = (b.count or 0) + len(vs)
        if b.t_last is None or ts[-1] >= b.t_last:  # time order: the last point is the newest
            b.last, b.t_last = vs[-1], ts[-1]
        out[(run_id, metric, first)] = b
        return
    if finite and len(set(x0s)) == n and tail.keys().isdisjoint(x0s):  # a new bucket each
        new = list(
            map(
                _Bucket,
                repeat(run_id, n),
                repeat(metric, n),
                x0s,
                vs,
                vs,
                map(add, repeat(0.0, n), vs),  # 0.0 + v, as series._fold
                repeat(1, n),
                repeat(0, n),
                vs,
                ts,
            )
        )
        tail.update(zip(x0s, new, strict=True))
        out.update(zip(zip(repeat(run_id, n), repeat(metric, n), x0s, strict=True), new, strict=True))
        ser.buckets += n
        return
    _fold_each(ser, points, out)


def _fold_each(ser: _Series, points: list[Point], out: dict) -> None:
    """``_fold_points`` one point at a time (a few points: less work than building the lists)."""
    run_id, metric, w, tail = ser.run_id, ser.metric, ser.width, ser.tail
    for p in points:
        x0 = floor(p.x / w) * w
        v, t = p.value, p.t
        b = tail.get(x0)
        if b is None:  # a new bucket (most points: a step's own): made with its first point
            if isfinite(v):
                b = _Bucket(run_id, metric, x0, v, v, 0.0 + v, 1, 0, v, t)
            else:
                b = _Bucket(run_id, metric, x0, None, None, 0.0, 0, 1, None, t)
            tail[x0] = out[(run_id, metric, x0)] = b
            ser.buckets += 1
            continue
        if isfinite(v):
            b.min = v if b.min is None or v < b.min else b.min
            b.max = v if b.max is None or v > b.max else b.max
            b.sum = (b.sum or 0.0) + v
            b.count = (b.count or 0) + 1
        else:
            b.nonfinite = (b.nonfinite or 0) + 1
        if b.t_last is None or t >= b.t_last:
            b.last, b.t_last = (v if isfinite(v) else None), t
        out[(run_id, metric, x0)] = b


def _new_series(run_id: str, metric: str, axis: str) -> _Series:
    ser = _Series(run_id, metric, axis, 1.0 if axis == "step" else TIME_WIDTH)
    ser.unsaved = META_EVERY  # a new series' row is written at once
    return ser


class SeriesTails:
    def __init__(self, max_buckets: int = MAX_BUCKETS) -> None:
        self.max_buckets = max_buckets
        self._runs: dict[str, dict[str, _Series]] = {}

    def forget(self, run: str) -> None:
        self._runs.pop(run, None)

    def unsaved(self, runs: Iterable[str], out: SeriesWrites) -> None:
        """Hand the bookkeeping rows of these runs' series not written since their last change to ``out``
        (at shutdown: what ``META_EVERY`` left in memory)."""
        for run in runs:
            for ser in self._runs.get(run, {}).values():
                if ser.unsaved:
                    out.add_meta(ser)

    def preload(self, s: Session, runs: Iterable[str], chunk: int = 1000) -> None:
        """The bookkeeping of these runs' series that memory does not hold yet, in one query rather than
        one a run (a watch's first poll in this process)."""
        missing = sorted({r for r in runs if r not in self._runs})
        for i in range(0, len(missing), chunk):
            part = missing[i : i + chunk]
            got: dict[str, dict[str, _Series]] = {r: {} for r in part}
            for m in s.scalars(select(SeriesMeta).where(SeriesMeta.run_id.in_(part))):
                got[m.run_id][m.metric] = _Series(
                    m.run_id, m.metric, m.axis, m.width, m.buckets, m.points, {}, math.inf
                )
            self._runs.update(got)

    def _series_of(self, s: Session, run_id: str) -> dict[str, _Series]:
        known = self._runs.get(run_id)
        if known is None:  # first poll of the run in this process: what is stored, with nothing in memory
            known = self._runs[run_id] = {
                m.metric: _Series(run_id, m.metric, m.axis, m.width, m.buckets, m.points, {}, math.inf)
                for m in s.scalars(select(SeriesMeta).where(SeriesMeta.run_id == run_id))
            }
        return known

    def fold(
        self, s: Session, run_id: str, series: Mapping[str, tuple[str, list[Point]]], out: SeriesWrites
    ) -> None:
        """Fold one poll's points of every metric of a run into memory; the changed rows go to ``out``.
        The common case (points at or after the buckets memory holds) in one pass; a rewind, or a run's
        first poll in this process, reads the stored buckets it touches first (``_fold_loading``)."""
        known = self._runs.get(run_id)
        if known is None:
            return self._fold_loading(s, run_id, series, out)
        for metric, (_, points) in series.items():
            ser = known.get(metric)
            if points and ser is not None and ser.buckets:
                w = ser.width
                x0 = floor(min(map(_x, points)) / w) * w
                if x0 < ser.known_from or (ser.tail and x0 < max(ser.tail)):  # older buckets, or a rewind
                    return self._fold_loading(s, run_id, series, out)
        grown = []
        for metric, (axis, points) in series.items():
            if not points:
                continue
            ser = known.get(metric)
            if ser is None:
                ser = known[metric] = _new_series(run_id, metric, axis)
            if len(points) < BULK:
                _fold_each(ser, points, out.buckets)
            else:
                _fold_points(ser, list(map(_x, points)), points, out.buckets)
            # the bookkeeping, the oldest buckets out of memory (usually one: a poll opens one or two)
            ser.points += len(points)
            ser.unsaved += 1
            if ser.unsaved >= META_EVERY:
                out.add_meta(ser)
            tail = ser.tail
            if len(tail) > KEEP:
                kept = sorted(tail)
                for x0 in kept[:-KEEP]:
                    del tail[x0]
                ser.known_from = max(ser.known_from, kept[-KEEP])
            if ser.buckets > self.max_buckets:
                grown.append(ser)
        self._compact_grown(s, grown, out)

    def _fold_loading(
        self, s: Session, run_id: str, series: Mapping[str, tuple[str, list[Point]]], out: SeriesWrites
    ) -> None:
        series = {m: v for m, v in series.items() if v[1]}
        if not series:
            return
        known = self._series_of(s, run_id)
        groups: dict[str, dict[float, list[Point]]] = {}
        for metric, (axis, points) in series.items():
            ser = known.get(metric)
            if ser is None:
                ser = known[metric] = _new_series(run_id, metric, axis)
            g: dict[float, list[Point]] = {}
            for p in points:
                g.setdefault(math.floor(p.x / ser.width) * ser.width, []).append(p)
            groups[metric] = g
        self._load_missing(s, run_id, known, groups)
        for metric, g in groups.items():
            ser = known[metric]
            self._supersede(s, ser, min(g), min(p.t for p in series[metric][1]), out)
            for x0, pts in g.items():
                b = ser.tail.get(x0)
                if b is None:
                    b = ser.tail[x0] = _Bucket(run_id=run_id, metric=metric, x0=x0)
                    ser.buckets += 1
                for p in pts:
                    _fold(b, p)
                out.buckets[(run_id, metric, x0)] = b
            self._folded(ser, len(series[metric][1]), out)
        self._compact_grown(s, [ser for m in groups if (ser := known[m]).buckets > self.max_buckets], out)

    @staticmethod
    def _supersede(s: Session, ser: _Series, x0: float, t: float, out: SeriesWrites) -> None:
        """A rewind (``series.stale``) moves the buckets it redoes aside first (memory holds every stored
        bucket from ``x0`` on: ``_load_missing``)."""
        old = stale(ser.tail, x0, t)
        if not old:
            return
        for b in old:
            del ser.tail[b.x0]
            out.buckets.pop((ser.run_id, ser.metric, b.x0), None)
        ser.buckets -= len(old)
        retire(s, ser.run_id, ser.metric, ser.width, [b.row() for b in old], t)
        out.add_meta(ser)

    @staticmethod
    def _folded(ser: _Series, points: int, out: SeriesWrites) -> None:
        """After a poll's points folded into a series: its bookkeeping, the oldest buckets out of memory
        (usually one: a poll opens one or two)."""
        ser.points += points
        ser.unsaved += 1
        if ser.unsaved >= META_EVERY:
            out.add_meta(ser)
        tail = ser.tail
        if len(tail) > KEEP:
            while len(tail) > KEEP:
                del tail[min(tail)]
            ser.known_from = max(ser.known_from, min(tail))

    def _compact_grown(self, s: Session, grown: list[_Series], out: SeriesWrites) -> None:
        grown = grown[: COMPACT_PER_BATCH - out.compactions]  # the rest: at their next poll (docstring)
        if not grown:
            return
        out.compactions += len(grown)
        out.flush(s)  # the compaction reads every stored bucket of the series
        compact_many(s, grown, self.max_buckets)  # a run's series at once
        for ser in grown:
            ser.tail, ser.known_from = {}, math.inf
            out.add_meta(ser)

    def _load_missing(
        self, s: Session, run_id: str, known: Mapping[str, _Series], groups: Mapping[str, dict[float, list]]
    ) -> None:
        """Read the stored buckets this poll touches that memory does not hold (from the smallest x0
        on, per axis: they sit at the end of each series), as ``series.ingest_run`` does."""
        wanted, lows = [], {}
        for axis in ("step", "time"):
            names = [
                m
                for m, g in groups.items()
                if known[m].axis == axis and known[m].buckets and min(g) < known[m].known_from
            ]
            if names:
                low = min(min(groups[m]) for m in names)
                wanted.append(and_(SeriesBucket.metric.in_(names), SeriesBucket.x0 >= low))
                lows.update(dict.fromkeys(names, low))
        if not wanted:
            return
        # plain rows, not ORM objects: nothing to track, expunge or flush (a rewind reads many)
        columns = [getattr(SeriesBucket, c) for c in ("metric", "x0", *BUCKET_COLUMNS)]
        for metric, x0, *values in s.execute(
            select(*columns).where(SeriesBucket.run_id == run_id, or_(*wanted))
        ):
            ser = known[metric]
            if x0 not in ser.tail:  # memory holds the newer figures of what it has
                ser.tail[x0] = _Bucket(run_id, metric, x0, *values)
        for metric, low in lows.items():
            known[metric].known_from = min(known[metric].known_from, low)
