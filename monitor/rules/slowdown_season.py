"""The run's own cycle, for the ``slowdown`` rule (monitor/rules/slowdown.py): a run whose speed follows
its data or schedule in a cycle of steps (hundreds of steps slow, then hundreds fast) is judged against
the step time expected at this point of its cycle, not a level: a slowdown that starts as the run enters
its fast phase leaves the step time where the slow phase puts it, and a level cannot tell it from the
run's own swing until the fast phase should have come (hours at 100 s a step).

The cycle is learned from the run, never given: ``Season`` keeps the baseline's bucket values with their
position (steps progressed, the bucket's middle) for up to ``maxlen`` buckets, resamples them on a grid
of one usual bucket's steps and takes the lag of the highest autocorrelation (the shortest of those
within ``HARMONIC`` of the highest: a cycle, not a multiple of it, and past the first lag where the values
decorrelate: a series that only moves slowly has no cycle), refined between grid points. A cycle
is accepted only when the history holds at least two of it, the autocorrelation at it is at least
``R_MIN`` and the seasonal model explains at least ``SHARE`` of the variance of the buckets it can
judge: the expected value at a position is the mean of the previous (up to ``CYCLES``) cycles' values at
the same point of the cycle. Otherwise there is no cycle and the rule keeps its level baseline.

With a cycle the rule's statistics are those of the residuals (a bucket's value less its expected one):
their spread (``sigma``), their drift and the largest excursion they came back from by themselves
(``swing``; an alert that resolved by itself is remembered in ``resolved``). Pure computation, no I/O."""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Sequence
from itertools import islice
from operator import sub

from monitor.rules.slowdown_stats import came_back, drift, persistence
from monitor.rules.windows import MAD_TO_SIGMA, median_of_sorted

R_MIN = 0.5  # the autocorrelation a cycle needs at its lag
SHARE = 0.4  # ... and the share of the buckets' variance the seasonal model must explain
HARMONIC = 0.9  # the shortest lag within this share of the best autocorrelation is the cycle
CYCLES = 3  # the expected value is the mean of up to this many previous cycles at the same point
MIN_GRID = 4  # a cycle spans at least this many buckets (else the buckets cannot show it)
REFIT = 4  # the cycle is looked for again every this many buckets added
ENVELOPE = 0.375  # the expected value is the slowest within this many buckets of the point (its phase error)


def _interp(pos: Sequence[float], xs: Sequence[float], q: float) -> float:
    """The value at position q, linear between the two buckets around it (pos ascending, q in range)."""
    j = bisect_left(pos, q)
    if j <= 0:
        return xs[0]
    if j >= len(pos):
        return xs[-1]
    p0, p1 = pos[j - 1], pos[j]
    if p1 <= p0:
        return xs[j]
    f = (q - p0) / (p1 - p0)
    return xs[j - 1] + f * (xs[j] - xs[j - 1])


def median_gap(pos: Sequence[float]) -> float:
    """The steps between two buckets' middles, usually: one bucket's steps."""
    return median_of_sorted(sorted(map(sub, islice(pos, 1, None), pos)))  # b - a, in a C loop


def resample(pos: Sequence[float], xs: Sequence[float], start: float, g: float, m: int) -> list[float]:
    """``[_interp(pos, xs, start + j * g) for j in range(m)]``, for the whole grid at once (numpy: the same
    operations on each value, so the same floats, without a Python call per grid point)."""
    import numpy as np  # (here: the CLI's light commands do not load numpy)

    n = len(pos)
    p = np.fromiter(pos, float, n)
    x = np.fromiter(xs, float, n)
    q = start + np.arange(m) * g
    j = np.searchsorted(p, q, side="left")  # bisect_left
    jc = np.clip(j, 1, n - 1)
    p0, p1, x0, x1 = p[jc - 1], p[jc], x[jc - 1], x[jc]
    with np.errstate(divide="ignore", invalid="ignore"):
        v = x0 + (q - p0) / (p1 - p0) * (x1 - x0)
    v = np.where(p1 <= p0, x1, v)
    v = np.where(j <= 0, x[0], v)
    return np.where(j >= n, x[-1], v).tolist()


def flat(xs: Sequence[float]) -> bool:
    """Are all the values 0 (a run whose buckets' step time never moves: timestamps in whole seconds, a
    fixed cadence)? Then there is no cycle (``find_period`` finds none: no variance), found in one pass."""
    return bool(xs) and not any(xs)  # (-0.0 is 0 too; a NaN is not)


def find_period(pos: Sequence[float], xs: Sequence[float], gap: float | None = None) -> float | None:
    """The dominant cycle of xs over pos (in steps), or None: the lag of the highest autocorrelation of
    the values resampled on a grid of the median gap between buckets (``gap`` if known; the shortest
    lag within HARMONIC of the highest), accepted at an autocorrelation of R_MIN or more and two cycles or
    more held. (Products and differences are taken by numpy, value by value, and summed by Python's
    ``sum`` in the same order: the same floats as a loop over the values, which took most of a replay.)"""
    n = len(pos)
    if n < 4 * MIN_GRID or flat(xs):
        return None
    g = median_gap(pos) if gap is None else gap
    if g <= 0:
        return None
    import numpy as np

    m = int((pos[-1] - pos[0]) / g) + 1
    grid = resample(pos, xs, pos[0], g, m)
    mean = sum(grid) / m
    d = np.array(grid) - mean
    sq = (d * d).tolist()
    if sum(sq) <= 0:
        return None
    r = [0.0] * (m // 2 + 2)
    for lag in range(1, m // 2 + 1):
        den = math.sqrt(sum(sq[: m - lag]) * sum(sq[lag:]))
        r[lag] = sum((d[: m - lag] * d[lag:]).tolist()) / den if den > 0 else 0.0
    # a cycle: the values decorrelate (a lag where r falls to 0 or below: half a cycle away they differ),
    # then correlate again; a series that merely moves slowly (a level, a ramp, one slow spell) never does
    low = next((k for k in range(1, m // 2 + 1) if r[k] <= 0.0), None)
    if low is None:
        return None
    first = max(low, MIN_GRID)
    best = max(r[first:], default=0.0)
    if best < R_MIN:
        return None
    lag = next(k for k in range(first, m // 2 + 1) if r[k] >= HARMONIC * best and r[k] >= r[k + 1])
    left, mid, right = r[lag - 1], r[lag], r[lag + 1]
    curve = left - 2 * mid + right
    shift = 0.5 * (left - right) / curve if curve < 0 else 0.0
    period = (lag + max(-0.5, min(0.5, shift))) * g
    return period if 2 * period <= pos[-1] - pos[0] else None


class Season:
    """The baseline's buckets over a longer history (``maxlen``), the cycle found in them (``period``, in
    steps, or None) and the statistics of their residuals against it."""

    # ``nonzero``: how many of ``xs`` are not 0 (a NaN counts, as for ``flat``), so that ``refresh`` knows
    # a flat history without a pass over it each bucket; None: not counted yet (a snapshot from before it)
    # fmt: off
    __slots__ = (
        "cap", "pos", "xs", "ws", "k", "period", "gap", "sigma", "drift", "swing", "resolved", "n", "added",
        "nonzero",
    )
    # fmt: on

    def __init__(self, maxlen: int, k: float) -> None:
        self.cap = maxlen  # buckets held, as arrays of doubles (8 bytes a value, a list's float 32)
        self.pos = array("d")
        self.xs = array("d")
        self.ws = array("d")
        self.k = k  # the CUSUM's allowance (shift / 2), for the swing
        self.period: float | None = None
        self.gap = 0.0  # one bucket's steps (the cycle's phase is known to a part of it)
        self.sigma = self.drift = self.swing = 0.0
        self.resolved = 0.0  # the peak of an alert that resolved by itself against the cycle (kept)
        self.n = 0  # residuals the statistics are of
        self.added = 0
        self.nonzero = 0

    def clear(self) -> None:
        del self.pos[:], self.xs[:], self.ws[:]
        self.period, self.sigma, self.drift, self.n, self.added, self.gap = None, 0.0, 0.0, 0, 0, 0.0
        self.nonzero = 0

    def resize(self, maxlen: int) -> None:
        """Hold up to ``maxlen`` buckets (the newest of those held are kept)."""
        self.cap = maxlen
        self.pos, self.xs, self.ws = self.pos[-maxlen:], self.xs[-maxlen:], self.ws[-maxlen:]
        self.nonzero = None  # (counted again when asked)

    def _after_restore(self) -> None:
        """Snapshots written before held the buckets as lists, before that as deques (``maxlen`` the
        bound), and before that no count of the values not 0 (counted when first asked)."""
        if isinstance(self.pos, deque):
            self.cap = self.pos.maxlen
        if type(self.pos) is not array:
            self.pos, self.xs, self.ws = array("d", self.pos), array("d", self.xs), array("d", self.ws)
        if not hasattr(self, "nonzero"):
            self.nonzero = None

    def add(self, pos: float, x: float, w: float) -> None:
        if self.pos and pos <= self.pos[-1]:
            return  # positions only grow (a bucket without one is left out)
        xs, nonzero = self.xs, self.nonzero
        if nonzero is not None:
            if len(xs) == self.cap and xs[0]:
                nonzero -= 1  # (the oldest leaves)
            self.nonzero = nonzero + 1 if x else nonzero
        self.pos.append(pos)
        xs.append(x)
        self.ws.append(w)
        if len(self.pos) > self.cap:
            del self.pos[0], self.xs[0], self.ws[0]
        self.added += 1

    def expected(self, pos: float, period: float | None = None) -> float | None:
        """The mean of the previous cycles' values at this point of the cycle, each the highest (the
        slowest) within ENVELOPE of a bucket of it: the cycle's phase is known to about that, and a
        narrow feature of it (a few slow steps) falls in one bucket or the next (None: no cycle, or
        none held before this position)."""
        period = period or self.period
        if period is None or not self.pos:
            return None
        total = count = 0
        first, last, pos_, xs, half = self.pos[0], self.pos[-1], self.pos, self.xs, self.gap * ENVELOPE
        c = (
            math.floor((pos - last) / period) + 1 if pos > last else 1
        )  # the newest cycle held (the lag's not)
        while count < CYCLES:
            q = pos - c * period
            if q < first:
                break
            total += max(_interp(pos_, xs, q - half), _interp(pos_, xs, q), _interp(pos_, xs, q + half))
            count += 1
            c += 1
        return total / count if count else None

    def refresh(self, need: int) -> bool:
        """Look for the cycle again (every REFIT buckets) and refresh the residuals' statistics over the
        newest ``need``.. buckets. True when the cycle was found, or lost, just now."""
        if self.added < REFIT and self.period is not None:
            self._stats()
            return False
        self.added = 0
        had = self.period is not None
        if self.nonzero is None:  # (a snapshot from before the count was kept)
            self.nonzero = sum(1 for x in self.xs if x)
        if self.xs and not self.nonzero:  # flat(self.xs), without a pass over it
            period = None  # (the gap, used only with a cycle, is left as it was)
        else:
            self.gap = median_gap(self.pos) if len(self.pos) > 1 else 0.0
            period = find_period(self.pos, self.xs, self.gap)  # (fewer than 2 buckets: no period)
        if period is not None and not self._explains(period, need):
            period = None
        self.period = period
        if period is not None:
            self._stats()
        return had != (period is not None)

    def _residuals(self, period: float) -> tuple[list[float], list[float], list[float]]:
        res, raw, ws = [], [], []
        for p, x, w in zip(self.pos, self.xs, self.ws, strict=True):
            e = self.expected(p, period)
            if e is not None:
                res.append(x - e)
                raw.append(x)
                ws.append(w)
        return res, raw, ws

    def _explains(self, period: float, need: int) -> bool:
        res, raw, _ = self._residuals(period)
        if len(res) < need:
            return False
        mean = sum(raw) / len(raw)
        total = sum((x - mean) ** 2 for x in raw)
        return total > 0 and sum(r * r for r in res) <= (1 - SHARE) * total

    def _stats(self) -> None:
        res, _, ws = self._residuals(self.period)
        if not res:
            return
        ordered = sorted(res)
        mid = median_of_sorted(ordered)
        spread = MAD_TO_SIGMA * median_of_sorted(sorted(abs(v - mid) for v in ordered))
        values = deque(res)
        self.sigma = spread * persistence(values, mid)
        self.drift = drift(values)
        self.n = len(res)
        self.swing = max(self.resolved, came_back(res, ws, 0.0, self.k))
