"""A chart series in memory as one ``array('d')``: its bookkeeping (``H`` doubles: bucket width, buckets,
points, ``known_from``, polls unsaved, axis) then its newest buckets, ``WIDTH`` doubles each (x0, min,
max, sum, count, nonfinite, last, t_last). A replica holds ~20 series of each of 10,000 runs: no Python
object a series or a bucket, no dict of buckets. A missing figure (min, max and last of a bucket of
NaNs only, a t_last never stored) is a NaN: those columns only ever hold finite values otherwise.
Counts are doubles (exact below 2**53). A poll's points of a series come as columns too (``Points``:
x, value, t), and fold in one pass exactly as ``series._fold`` folds them one by one: the same floats,
in the same order. The array is changed in place, never replaced (the writer holds it until a flush).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from functools import reduce
from itertools import chain, islice, repeat
from math import floor, inf, isfinite, nan
from operator import add, le, mul, truediv

from monitor.storage.series import Point, _Bucket

W, BUCKETS, POINTS, KNOWN_FROM, UNSAVED, AXIS = range(6)  # the bookkeeping, first in the array
H = 6  # doubles of bookkeeping; the buckets from there
AXES = ("step", "time")  # ``AXIS``: 0 or 1
WIDTH = 8  # doubles a bucket
X0, MIN, MAX, SUM, COUNT, NONFINITE, LAST, T_LAST = range(WIDTH)
BULK = 8  # points of a series in a poll from which they fold as whole lists (``fold_bulk``)


class Points:
    """A series' points of one poll as three columns (no object a point); iterates as ``Point``s for
    the paths that fold one by one (``series.ingest_run``, a rewind)."""

    __slots__ = ("xs", "vs", "ts")

    def __init__(self, xs: list[float] | None = None, vs: list[float] | None = None, ts: list | None = None):
        self.xs: list[float] = [] if xs is None else xs
        self.vs: list[float] = [] if vs is None else vs
        self.ts: list[float] = [] if ts is None else ts

    @classmethod
    def of(cls, points: Iterable[Point]) -> Points:
        if type(points) is cls:
            return points  # type: ignore[return-value]
        points = list(points)
        return cls([p.x for p in points], [p.value for p in points], [p.t for p in points])

    def __len__(self) -> int:
        return len(self.xs)

    def __iter__(self) -> Iterator[Point]:
        return map(Point, self.xs, self.vs, self.ts)

    def __repr__(self) -> str:
        return f"Points({list(self)!r})"


def series(axis: str, width: float, buckets: int = 0, points: int = 0, known_from: float = -inf) -> array:
    """A series with no bucket in memory."""
    return array("d", (width, buckets, points, known_from, 0, AXES.index(axis)))


def meta_row(run_id: str, metric: str, a: array) -> tuple:
    """The series' ``series_meta`` row (``series_tails.META_ROW``'s order)."""
    return (run_id, metric, AXES[int(a[AXIS])], a[W], int(a[BUCKETS]), int(a[POINTS]))


def find(tail: array, x0: float) -> int:
    """The position of bucket ``x0`` in ``tail`` (-1: none; a tail holds two or three)."""
    for i in range(H, len(tail), WIDTH):
        if tail[i] == x0:
            return i
    return -1


def row(run_id: str, metric: str, tail: array, i: int) -> tuple:
    """The bucket at ``i`` as a ``series_buckets`` row (``series_tails.BUCKET_ROW``'s order)."""
    mn, mx, last, t = tail[i + MIN], tail[i + MAX], tail[i + LAST], tail[i + T_LAST]
    return (
        run_id,
        metric,
        tail[i],
        None if mn != mn else mn,
        None if mx != mx else mx,
        tail[i + SUM],
        int(tail[i + COUNT]),
        int(tail[i + NONFINITE]),
        None if last != last else last,
        None if t != t else t,
    )


def unpack(run_id: str, metric: str, tail: array) -> dict[float, _Bucket]:
    """The buckets as objects by x0 (the rare paths: a rewind, older buckets read, a compaction)."""
    return {tail[i]: _Bucket(*row(run_id, metric, tail, i)) for i in range(H, len(tail), WIDTH)}


def pack(buckets: Iterable[_Bucket]) -> array:
    """``unpack``'s inverse, in x0 order (the buckets, without the bookkeeping)."""
    out = array("d")
    for b in sorted(buckets, key=lambda b: b.x0):
        out.extend(
            (
                b.x0,
                nan if b.min is None else b.min,
                nan if b.max is None else b.max,
                0.0 if b.sum is None else b.sum,
                b.count or 0,
                b.nonfinite or 0,
                nan if b.last is None else b.last,
                nan if b.t_last is None else b.t_last,
            )
        )
    return out


def fold_series(
    tail: array, pts: Points, low: float, keep: int, run_id: str, metric: str, out: dict[tuple, tuple]
) -> int:
    """Fold a poll's points of a series (at or after its buckets held: ``low``, the smallest x0 they go
    to) in one pass, as ``series._fold`` one by one; each touched bucket's row goes to ``out`` as it
    is after the poll, then the oldest buckets out of memory (``settle``). A new bucket takes the place
    of the oldest held when ``keep`` are held and that one is before ``low`` (no point of the poll goes
    there: the array does not grow). Returns how many buckets it opened."""
    held = (len(tail) - H) // WIDTH
    opened = fold_bulk(tail, pts, run_id, metric, out) if len(pts.xs) >= BULK else None
    if opened is None:
        opened, w, full = 0, tail[W], H + keep * WIDTH
        for x, v, t in zip(pts.xs, pts.vs, pts.ts, strict=True):
            x0 = floor(x / w) * w
            for i in range(H, len(tail), WIDTH):  # ``find``, inline: most points are a bucket's first
                if tail[i] == x0:
                    break
            else:  # a new bucket (most points: a step's own): made with its first point
                if len(tail) == full and tail[H] < low:
                    del tail[H : H + WIDTH]  # the oldest out: the array keeps its memory (no realloc)
                if isfinite(v):
                    tail.extend((x0, v, v, 0.0 + v, 1, 0, v, t))
                    out[(run_id, metric, x0)] = (run_id, metric, x0, v, v, 0.0 + v, 1, 0, v, t)
                else:
                    tail.extend((x0, nan, nan, 0.0, 0, 1, nan, t))
                    out[(run_id, metric, x0)] = (run_id, metric, x0, None, None, 0.0, 0, 1, None, t)
                opened += 1
                continue
            if isfinite(v):
                m = tail[i + MIN]
                if m != m or v < m:
                    tail[i + MIN] = v
                m = tail[i + MAX]
                if m != m or v > m:
                    tail[i + MAX] = v
                tail[i + SUM] = (tail[i + SUM] or 0.0) + v
                tail[i + COUNT] += 1
            else:
                tail[i + NONFINITE] += 1
            m = tail[i + T_LAST]
            if m != m or t >= m:
                tail[i + LAST] = v if isfinite(v) else nan
                tail[i + T_LAST] = t
            out[(run_id, metric, x0)] = row(run_id, metric, tail, i)
    if len(tail) == H + 2 * WIDTH and keep >= 2:  # the common case: none to go now
        if tail[H] > tail[H + WIDTH]:
            tail[H:] = tail[H + WIDTH :] + tail[H : H + WIDTH]
        if held + opened > 2:  # one went in the fold
            tail[KNOWN_FROM] = max(tail[KNOWN_FROM], tail[H])
    else:
        settle(tail, keep, held + opened)
    return opened


def fold_bulk(tail: array, pts: Points, run_id: str, metric: str, out: dict[tuple, tuple]) -> int | None:
    """The two common cases of many points over whole lists, in C: every point in one bucket (wide
    buckets, points in time order), or every point a new bucket of its own (a step's, narrow buckets).
    Returns how many buckets it opened; None: neither case (one by one then)."""
    xs, vs, ts, w = pts.xs, pts.vs, pts.ts, tail[W]
    n = len(xs)
    x0s = list(map(mul, map(floor, map(truediv, xs, repeat(w, n))), repeat(w, n)))
    finite = all(map(isfinite, vs))
    first = x0s[0]
    if finite and n > 1 and x0s.count(first) == n and all(map(le, ts, islice(ts, 1, None))):
        opened, i = 0, find(tail, first)
        if i < 0:  # made with its first point, as one by one
            v, i, opened = vs[0], len(tail), 1
            tail.extend((first, v, v, 0.0 + v, 1, 0, v, ts[0]))
            vs, ts = vs[1:], ts[1:]
        lo, hi = min(vs), max(vs)  # the first of equal ones, as one by one (ties keep the older)
        m = tail[i + MIN]
        if m != m or lo < m:
            tail[i + MIN] = lo
        m = tail[i + MAX]
        if m != m or hi > m:
            tail[i + MAX] = hi
        tail[i + SUM] = reduce(add, vs, tail[i + SUM] or 0.0)  # in order, one addition at a time
        tail[i + COUNT] += len(vs)
        m = tail[i + T_LAST]
        if m != m or ts[-1] >= m:  # time order: the last point is the newest
            tail[i + LAST], tail[i + T_LAST] = vs[-1], ts[-1]
        out[(run_id, metric, first)] = row(run_id, metric, tail, i)
        return opened
    if finite and len(set(x0s)) == n and set(tail[H::WIDTH]).isdisjoint(x0s):  # a new bucket each
        sums = list(map(add, repeat(0.0, n), vs))  # 0.0 + v, as series._fold
        tail.extend(
            chain.from_iterable(zip(x0s, vs, vs, sums, repeat(1, n), repeat(0, n), vs, ts, strict=True))
        )
        rows = zip(
            repeat(run_id, n),
            repeat(metric, n),
            x0s,
            vs,
            vs,
            sums,
            repeat(1, n),
            repeat(0, n),
            vs,
            ts,
            strict=False,
        )
        out.update(zip(zip(repeat(run_id, n), repeat(metric, n), x0s, strict=False), rows, strict=False))
        return n
    return None


def settle(tail: array, keep: int, held: int) -> None:
    """After a poll: the buckets in x0 order, all but the ``keep`` newest out. ``held``: how many it
    would hold had none gone in the fold; if any went (then or now), every stored bucket from the
    oldest kept on is in memory (``KNOWN_FROM``)."""
    k = (len(tail) - H) // WIDTH
    if k == 2 and keep >= 2:  # the common case: none to go now, the two in order or not
        if tail[H] > tail[H + WIDTH]:
            tail[H:] = tail[H + WIDTH :] + tail[H : H + WIDTH]
        if held > 2:  # one went in the fold
            tail[KNOWN_FROM] = max(tail[KNOWN_FROM], tail[H])
        return
    if k >= 2:
        x0s = tail[H::WIDTH]
        if any(a > b for a, b in zip(x0s, islice(x0s, 1, None), strict=False)):
            order = sorted(range(k), key=x0s.__getitem__)
            at = [H + j * WIDTH for j in order]
            tail[H:] = array("d", chain.from_iterable(tail[i : i + WIDTH] for i in at))
        if k > keep:
            del tail[H : H + (k - keep) * WIDTH]
    if held > k or k > keep:
        tail[KNOWN_FROM] = max(tail[KNOWN_FROM], tail[H + X0])


def x0s(tail: array) -> list[float]:
    return tail[H::WIDTH].tolist()
