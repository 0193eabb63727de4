"""Chart series written from memory: the engine keeps, per (run, metric), the series' bookkeeping and
its newest buckets, folds each poll's points into them, and hands back only the rows that changed, to
be written for many runs at once (``bulk.upsert``). The database is read only for what memory does not
hold: a run's series the first time it is polled in this process, or points older than the buckets
kept (a rewind). Buckets fold exactly as ``series.ingest_run`` does; compaction is shared. A rewind's
redone steps do not fold into the buckets of their first attempt: those move aside first
(``series_attempts``), so the chart keeps both. In memory a series is one ``array('d')``: its
bookkeeping and its newest buckets (``tail_columns``).

A series grown past its bound is compacted in the batch that grew it, a run's series at once
(``series_compact``), at most ``COMPACT_PER_BATCH`` a batch: runs of a sweep started together grow past
it in the same poll, and their 20,000 series (1,000 runs) would hold the writer, and every poll waiting
on it, for most of a minute. The others wait for their next poll, a bucket or two over the bound."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from monitor.storage import bulk, tail_columns
from monitor.storage.models import SeriesBucket, SeriesMeta
from monitor.storage.series import MAX_BUCKETS, TIME_WIDTH, Point, _Bucket, _fold, retire, stale
from monitor.storage.series_compact import compact_many
from monitor.storage.tail_columns import (
    AXES,
    AXIS,
    BUCKETS,
    KNOWN_FROM,
    POINTS,
    UNSAVED,
    WIDTH,
    H,
    Points,
    W,
    fold_series,
    meta_row,
    pack,
    unpack,
)

BULK = tail_columns.BULK  # points of a series in a poll from which they fold as whole lists
KEEP = 2  # newest buckets kept in memory per series (a poll touches one or two; older ones are read)
META_EVERY = 4  # a series' bookkeeping row is written at least every this many polls that changed it
COMPACT_PER_BATCH = 200  # series compacted in one batch at most (~2 ms each on PostgreSQL)
BUCKET_COLUMNS = ("min", "max", "sum", "count", "nonfinite", "last", "t_last")
META_COLUMNS = ("axis", "width", "buckets", "points")
BUCKET_ROW = ("run_id", "metric", "x0", *BUCKET_COLUMNS)
META_ROW = ("run_id", "metric", *META_COLUMNS)


def _bucket_row(b: _Bucket) -> tuple:
    return (b.run_id, b.metric, b.x0, b.min, b.max, b.sum, b.count, b.nonfinite, b.last, b.t_last)


class _View:
    """A series as the rare paths read and change it (a rewind, older buckets read, a compaction:
    ``series._compact``), over its array."""

    __slots__ = ("run_id", "metric", "a")

    def __init__(self, run_id: str, metric: str, a: array) -> None:
        self.run_id, self.metric, self.a = run_id, metric, a

    @property
    def axis(self) -> str:
        return AXES[int(self.a[AXIS])]

    @property
    def width(self) -> float:
        return self.a[W]

    @width.setter
    def width(self, v: float) -> None:
        self.a[W] = v

    @property
    def buckets(self) -> int:
        return int(self.a[BUCKETS])

    @buckets.setter
    def buckets(self, v: int) -> None:
        self.a[BUCKETS] = v


@dataclass
class SeriesWrites:
    """The rows a batch changed: buckets as ``BUCKET_ROW`` tuples (as of their last fold), series as
    their arrays (read at the flush); written by :meth:`flush`, at the end of the batch (or before a
    compaction, which reads the stored buckets)."""

    buckets: dict[tuple[str, str, float], tuple] = field(default_factory=dict)
    metas: dict[tuple[str, str], array] = field(default_factory=dict)
    compactions: int = 0  # series compacted in this batch (at most COMPACT_PER_BATCH)

    def add_meta(self, run_id: str, metric: str, a: array) -> None:
        self.metas[(run_id, metric)] = a
        a[UNSAVED] = 0

    def flush(self, s: Session) -> None:
        keys = ("run_id", "metric", "x0")
        rows = list(self.buckets.values())  # one per key: ``buckets`` is keyed by it
        # typed: str keys, float figures, int counts (points are floats: ``runs_repo.fold_samples``)
        bulk.upsert(
            s, SeriesBucket.__table__, rows, keys, BUCKET_COLUMNS, unique=True, columns=BUCKET_ROW, typed=True
        )
        metas = [meta_row(r, m, a) for (r, m), a in self.metas.items()]
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


def _new_series(axis: str) -> array:
    a = tail_columns.series(axis, 1.0 if axis == "step" else TIME_WIDTH)
    a[UNSAVED] = META_EVERY  # a new series' row is written at once
    return a


def _stored(m: SeriesMeta) -> array:
    """A stored series, with nothing in memory."""
    return tail_columns.series(m.axis, m.width, m.buckets, m.points, math.inf)


class SeriesTails:
    def __init__(self, max_buckets: int = MAX_BUCKETS) -> None:
        self.max_buckets = max_buckets
        self._runs: dict[str, dict[str, array]] = {}  # run -> metric -> its series (``tail_columns``)

    def forget(self, run: str) -> None:
        self._runs.pop(run, None)

    def unsaved(self, runs: Iterable[str], out: SeriesWrites) -> None:
        """Hand the bookkeeping rows of these runs' series not written since their last change to ``out``
        (at shutdown: what ``META_EVERY`` left in memory)."""
        for run in runs:
            for metric, a in self._runs.get(run, {}).items():
                if a[UNSAVED]:
                    out.add_meta(run, metric, a)

    def preload(self, s: Session, runs: Iterable[str], chunk: int = 1000) -> None:
        """The bookkeeping of these runs' series that memory does not hold yet, in one query rather than
        one a run (a watch's first poll in this process)."""
        missing = sorted({r for r in runs if r not in self._runs})
        for i in range(0, len(missing), chunk):
            part = missing[i : i + chunk]
            got: dict[str, dict[str, array]] = {r: {} for r in part}
            for m in s.scalars(select(SeriesMeta).where(SeriesMeta.run_id.in_(part))):
                got[m.run_id][m.metric] = _stored(m)
            self._runs.update(got)

    def _series_of(self, s: Session, run_id: str) -> dict[str, array]:
        known = self._runs.get(run_id)
        if known is None:  # first poll of the run in this process: what is stored, with nothing in memory
            known = self._runs[run_id] = {
                m.metric: _stored(m) for m in s.scalars(select(SeriesMeta).where(SeriesMeta.run_id == run_id))
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
        polled, floor, inf = [], math.floor, math.inf
        for metric, (axis, points) in series.items():
            pts = points if type(points) is Points else Points.of(points)
            xs = pts.xs
            if not xs:
                continue
            a = known.get(metric)
            low = -inf
            if a is not None and a[BUCKETS]:
                w = a[W]
                low = floor((xs[0] if len(xs) == 1 else min(xs)) / w) * w
                if low < a[KNOWN_FROM] or (len(a) > H and low < a[-WIDTH]):
                    return self._fold_loading(s, run_id, series, out)  # older buckets, or a rewind
            polled.append((metric, axis, a, pts, low))
        grown, buckets = [], out.buckets
        for metric, axis, a, pts, low in polled:
            if a is None:
                a = known[metric] = _new_series(axis)
            opened = fold_series(a, pts, low, KEEP, run_id, metric, buckets)
            # the bookkeeping (the oldest buckets went out of memory: usually one, a poll opens one or two)
            if opened:
                a[BUCKETS] += opened
            a[POINTS] += len(pts.xs)
            unsaved = a[UNSAVED] + 1
            a[UNSAVED] = unsaved
            if unsaved >= META_EVERY:
                out.add_meta(run_id, metric, a)
            if a[BUCKETS] > self.max_buckets:  # (one not compacted in its batch: at its next poll)
                grown.append(_View(run_id, metric, a))
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
            a = known.get(metric)
            if a is None:
                a = known[metric] = _new_series(axis)
            g: dict[float, list[Point]] = {}
            w = a[W]
            for p in points:
                g.setdefault(math.floor(p.x / w) * w, []).append(p)
            groups[metric] = g
        tails = {m: unpack(run_id, m, known[m]) for m in groups}
        self._load_missing(s, run_id, known, groups, tails)
        for metric, g in groups.items():
            ser, tail = _View(run_id, metric, known[metric]), tails[metric]
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
        grown = [_View(run_id, m, known[m]) for m in groups if known[m][BUCKETS] > self.max_buckets]
        self._compact_grown(s, grown, out)

    @staticmethod
    def _supersede(
        s: Session, ser: _View, tail: dict[float, _Bucket], x0: float, t: float, out: SeriesWrites
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
        out.add_meta(ser.run_id, ser.metric, ser.a)

    @staticmethod
    def _folded(ser: _View, tail: dict[float, _Bucket], points: int, out: SeriesWrites) -> None:
        """After a poll's points folded into a series: its bookkeeping, its newest buckets back into
        its array (the oldest out: usually one, a poll opens one or two)."""
        a = ser.a
        a[POINTS] += points
        a[UNSAVED] += 1
        if a[UNSAVED] >= META_EVERY:
            out.add_meta(ser.run_id, ser.metric, a)
        kept = sorted(tail)[-KEEP:]
        if len(tail) > KEEP:
            a[KNOWN_FROM] = max(a[KNOWN_FROM], kept[0])
        a[H:] = pack([tail[x0] for x0 in kept])

    def _compact_grown(self, s: Session, grown: list[_View], out: SeriesWrites) -> None:
        grown = grown[: COMPACT_PER_BATCH - out.compactions]  # the rest: at their next poll (docstring)
        if not grown:
            return
        out.compactions += len(grown)
        out.flush(s)  # the compaction reads every stored bucket of the series
        compact_many(s, grown, self.max_buckets)  # a run's series at once
        for ser in grown:
            del ser.a[H:]
            ser.a[KNOWN_FROM] = math.inf
            out.add_meta(ser.run_id, ser.metric, ser.a)

    def _load_missing(
        self,
        s: Session,
        run_id: str,
        known: Mapping[str, array],
        groups: Mapping[str, dict[float, list]],
        tails: Mapping[str, dict[float, _Bucket]],
    ) -> None:
        """Read the stored buckets this poll touches that memory does not hold (from the smallest x0
        on, per axis: they sit at the end of each series) into ``tails``, as ``series.ingest_run`` does."""
        wanted, lows = [], {}
        for axis in (0, 1):  # step, time
            names = [
                m
                for m, g in groups.items()
                if known[m][AXIS] == axis and known[m][BUCKETS] and min(g) < known[m][KNOWN_FROM]
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
            known[metric][KNOWN_FROM] = min(known[metric][KNOWN_FROM], low)
