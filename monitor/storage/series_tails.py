"""Chart series written from memory: the engine keeps, per (run, metric), the series' bookkeeping and
its newest buckets, folds each poll's points into them, and hands back only the rows that changed, to
be written for many runs at once (``bulk.upsert``). The database is read only for what memory does not
hold: a run's series the first time it is polled in this process, or points older than the buckets
kept (a rewind). Buckets fold exactly as ``series.ingest_run`` does; compaction is shared. A rewind's
redone steps do not fold into the buckets of their first attempt: those move aside first
(``series_attempts``), so the chart keeps both."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from monitor.storage import bulk, tail_columns
from monitor.storage.models import SeriesBucket, SeriesMeta
from monitor.storage.series import MAX_BUCKETS, TIME_WIDTH, Point, _Bucket, _compact, _fold, retire, stale
from monitor.storage.tail_columns import Points, fold_bulk, fold_each, pack, settle, unpack

BULK = tail_columns.BULK  # points of a series in a poll from which they fold as whole lists
KEEP = 2  # newest buckets kept in memory per series (a poll touches one or two; older ones are read)
META_EVERY = 4  # a series' bookkeeping row is written at least every this many polls that changed it
BUCKET_COLUMNS = ("min", "max", "sum", "count", "nonfinite", "last", "t_last")
META_COLUMNS = ("axis", "width", "buckets", "points")
BUCKET_ROW = ("run_id", "metric", "x0", *BUCKET_COLUMNS)
META_ROW = ("run_id", "metric", *META_COLUMNS)
_bucket_row = attrgetter(*BUCKET_ROW)  # a bucket object's row as a tuple, in C
_meta_row = attrgetter(*META_ROW)
_x, _t = attrgetter("x"), attrgetter("t")


@dataclass(slots=True)  # one per run and metric: no __dict__ each
class _Series:
    run_id: str
    metric: str
    axis: str
    width: float
    buckets: int = 0
    points: int = 0
    tail: array = field(default_factory=tail_columns.empty)  # the newest buckets (``tail_columns``)
    known_from: float = -math.inf  # every stored bucket at or after this x0 is in ``tail``
    unsaved: int = 0  # polls folded since the bookkeeping row was last handed to be written


@dataclass
class SeriesWrites:
    """The rows a batch changed (``BUCKET_ROW`` tuples by key, as of their last fold): written by
    :meth:`flush`, at the end of the batch (or before a compaction, which reads the stored buckets)."""

    buckets: dict[tuple[str, str, float], tuple] = field(default_factory=dict)
    metas: dict[tuple[str, str], _Series] = field(default_factory=dict)

    def add_meta(self, ser: _Series) -> None:
        self.metas[(ser.run_id, ser.metric)] = ser
        ser.unsaved = 0

    def flush(self, s: Session) -> None:
        keys = ("run_id", "metric", "x0")
        rows = list(self.buckets.values())  # one per key: ``buckets`` is keyed by it
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


def _fold_columns(ser: _Series, pts: Points, out: dict) -> None:
    """Fold a poll's points (at or after the buckets ``ser.tail`` holds) into it, in one pass; the
    touched buckets' rows go to ``out``."""
    tail, touched = ser.tail, []
    opened = fold_bulk(tail, ser.width, pts, touched) if len(pts) >= BULK else None
    if opened is None:
        opened = fold_each(tail, ser.width, pts, touched)
    ser.buckets += opened
    run_id, metric, find, row = ser.run_id, ser.metric, tail_columns.find, tail_columns.row
    for x0 in dict.fromkeys(touched):
        out[(run_id, metric, x0)] = row(run_id, metric, tail, find(tail, x0))


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
                    m.run_id, m.metric, m.axis, m.width, m.buckets, m.points, tail_columns.empty(), math.inf
                )
            self._runs.update(got)

    def _series_of(self, s: Session, run_id: str) -> dict[str, _Series]:
        known = self._runs.get(run_id)
        if known is None:  # first poll of the run in this process: what is stored, with nothing in memory
            known = self._runs[run_id] = {
                m.metric: _Series(
                    run_id, m.metric, m.axis, m.width, m.buckets, m.points, tail_columns.empty(), math.inf
                )
                for m in s.scalars(select(SeriesMeta).where(SeriesMeta.run_id == run_id))
            }
        return known

    def fold(
        self, s: Session, run_id: str, series: Mapping[str, tuple[str, Iterable[Point]]], out: SeriesWrites
    ) -> None:
        """Fold one poll's points of every metric of a run into memory; the changed rows go to ``out``.
        The common case (points at or after the buckets memory holds) in one pass; a rewind, or a run's
        first poll in this process, reads the stored buckets it touches first (``_fold_loading``)."""
        known = self._runs.get(run_id)
        if known is None:
            return self._fold_loading(s, run_id, series, out)
        polled = []
        for metric, (axis, points) in series.items():
            if not points:
                continue
            pts = Points.of(points)
            ser = known.get(metric)
            if ser is not None and ser.buckets:
                w = ser.width
                x0 = math.floor(min(pts.xs) / w) * w
                if x0 < ser.known_from or (ser.tail and x0 < ser.tail[-tail_columns.WIDTH]):
                    return self._fold_loading(s, run_id, series, out)  # older buckets, or a rewind
            polled.append((metric, axis, ser, pts))
        grown = []
        for metric, axis, ser, pts in polled:
            if ser is None:
                ser = known[metric] = _new_series(run_id, metric, axis)
            _fold_columns(ser, pts, out.buckets)
            # the bookkeeping, the oldest buckets out of memory (usually one: a poll opens one or two)
            ser.points += len(pts)
            ser.unsaved += 1
            if ser.unsaved >= META_EVERY:
                out.add_meta(ser)
            oldest = settle(ser.tail, KEEP)
            if oldest is not None:
                ser.known_from = max(ser.known_from, oldest)
            if ser.buckets > self.max_buckets:
                grown.append(ser)
        self._compact_grown(s, grown, out)

    def _fold_loading(
        self, s: Session, run_id: str, series: Mapping[str, tuple[str, Iterable[Point]]], out: SeriesWrites
    ) -> None:
        """The rare path, one point at a time over bucket objects (``series._fold``): the buckets this
        poll touches that memory does not hold are read first, a rewind moves the redone ones aside."""
        series = {m: (a, list(p)) for m, (a, p) in series.items() if p}
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
        tails = {m: unpack(run_id, m, known[m].tail) for m in groups}
        self._load_missing(s, run_id, known, groups, tails)
        for metric, g in groups.items():
            ser, tail = known[metric], tails[metric]
            self._supersede(s, ser, tail, min(g), min(p.t for p in series[metric][1]), out)
            for x0, pts in g.items():
                b = tail.get(x0)
                if b is None:
                    b = tail[x0] = _Bucket(run_id=run_id, metric=metric, x0=x0)
                    ser.buckets += 1
                for p in pts:
                    _fold(b, p)
                out.buckets[(run_id, metric, x0)] = _bucket_row(b)
            self._folded(ser, tail, len(series[metric][1]), out)
        self._compact_grown(s, [ser for m in groups if (ser := known[m]).buckets > self.max_buckets], out)

    @staticmethod
    def _supersede(
        s: Session, ser: _Series, tail: dict[float, _Bucket], x0: float, t: float, out: SeriesWrites
    ) -> None:
        """A rewind (``series.stale``) moves the buckets it redoes aside first (``tail`` holds every
        stored bucket from ``x0`` on: ``_load_missing``)."""
        old = stale(tail, x0, t)
        if not old:
            return
        for b in old:
            del tail[b.x0]
            out.buckets.pop((ser.run_id, ser.metric, b.x0), None)
        ser.buckets -= len(old)
        retire(s, ser.run_id, ser.metric, ser.width, [b.row() for b in old], t)
        out.add_meta(ser)

    @staticmethod
    def _folded(ser: _Series, tail: dict[float, _Bucket], points: int, out: SeriesWrites) -> None:
        """After a poll's points folded into a series: its bookkeeping, its newest buckets back into
        memory as columns (the oldest out: usually one, a poll opens one or two)."""
        ser.points += points
        ser.unsaved += 1
        if ser.unsaved >= META_EVERY:
            out.add_meta(ser)
        kept = sorted(tail)[-KEEP:]
        if len(tail) > KEEP:
            ser.known_from = max(ser.known_from, kept[0])
        ser.tail = pack([tail[x0] for x0 in kept])

    def _compact_grown(self, s: Session, grown: list[_Series], out: SeriesWrites) -> None:
        for ser in grown:
            out.flush(s)  # the compaction reads every stored bucket of the series
            _compact(s, ser, self.max_buckets)
            s.flush()
            ser.tail, ser.known_from = tail_columns.empty(), math.inf
            out.add_meta(ser)

    def _load_missing(
        self,
        s: Session,
        run_id: str,
        known: Mapping[str, _Series],
        groups: Mapping[str, dict[float, list]],
        tails: Mapping[str, dict[float, _Bucket]],
    ) -> None:
        """Read the stored buckets this poll touches that memory does not hold (from the smallest x0
        on, per axis: they sit at the end of each series) into ``tails``, as ``series.ingest_run`` does."""
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
            tail = tails[metric]
            if x0 not in tail:  # memory holds the newer figures of what it has
                tail[x0] = _Bucket(run_id, metric, x0, *values)
        for metric, low in lows.items():
            known[metric].known_from = min(known[metric].known_from, low)
