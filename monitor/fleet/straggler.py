"""Stragglers: a member of the fleet that moved away from the fleet, compared with its own past.

At every timestamp of a fleet metric each member gets its score against the fleet (``score.spread``:
distance from the fleet median in robust sigmas). A member's drift is its mean score over the recent
``window`` minus its mean score over the ``baseline`` before that (past scores clipped to +-``CLIP``
so that one old excursion does not dominate). Rank 0, a pipeline stage or a GPU in a hot slot that
has always read differently drifts by about 0; a GPU that starts throttling drifts by its new
distance. The oddest drift in the rule's direction is the track's output, unless more than ``most``
of the fleet drifted at least ``z / 2`` at once (the fleet changed: not one straggler).

Memory: one score per member and timestamp of the last ``window + baseline``; work: O(members) per
timestamp. The state is rebuilt from the stored raster after a restart (``monitor.engine.fleet``).
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from monitor.fleet.frame import Member, member_name
from monitor.fleet.score import magnitude, scores, spread

CLIP = 12.0
Direction = Literal["below", "above", "either"]


@dataclass(frozen=True)
class Drift:
    t: float
    score: float  # the oddest drift in robust sigmas (>= 0), 0 when none stands out or not warm yet
    member: str | None = None
    value: float | None = None  # that member's mean over the window
    median: float | None = None  # the fleet median's mean over the window


@dataclass
class _Column:
    t: float
    scores: array  # per member index, NaN: no value
    values: array
    median: float


class StragglerTrack:
    """One fleet metric of one run, for one straggler rule's window, baseline and direction."""

    def __init__(
        self,
        window: float,
        baseline: float,
        step: float,
        direction: Direction = "either",
        z: float = 6.0,
        most: float = 0.05,
        device_word: str | None = None,
        least: float = 0.0,
    ) -> None:
        self.window, self.baseline, self.step = window, baseline, step
        self.direction, self.z, self.most, self.device_word = direction, z, most, device_word
        self.least = least  # the unit's resolution (``units.resolution``)
        self.members: list[Member] = []
        self._index: dict[Member, int] = {}
        self._cols: deque[_Column] = deque()
        self._nwin = 0  # the last _nwin columns are in the window, the others in the baseline
        self.level = 0.0
        self.newest = -math.inf
        self._win = _Sums()
        self._base = _Sums()
        self._win_median = 0.0

    def add(self, t: float, members: Sequence[Member], values: Sequence[float]) -> Drift:
        """Take one timestamp's values (in ``members`` order) and return the drift at ``t``."""
        if t <= self.newest:
            return Drift(t, 0.0)
        self.newest = t
        for m in members:
            if m not in self._index:
                self._index[m] = len(self.members)
                self.members.append(m)
        n = len(self.members)
        row = array("d", [math.nan]) * n
        for m, v in zip(members, values, strict=False):
            row[self._index[m]] = v
        sp = spread(row, self.level, self.least)
        self.level = max(self.level, magnitude(row))
        if sp is None:
            return Drift(t, 0.0)
        col = _Column(t, array("d", scores(row, sp)), row, sp.median)
        self._cols.append(col)
        self._nwin += 1
        self._win.add(col, n, clip=None)
        self._win_median += col.median
        while self._nwin and self._cols[len(self._cols) - self._nwin].t <= t - self.window:
            old = self._cols[len(self._cols) - self._nwin]
            self._win.sub(old, clip=None)
            self._win_median -= old.median
            self._base.add(old, n, clip=CLIP)
            self._nwin -= 1
        while self._cols and self._cols[0].t <= t - self.window - self.baseline:
            self._base.sub(self._cols.popleft(), clip=CLIP)
        return self._drift(t)

    def _drift(self, t: float) -> Drift:
        need_win = max(1.0, 0.5 * self.window / self.step)
        need_base = max(1.0, 0.5 * self.baseline / self.step)
        best, best_i, count, members = 0.0, -1, 0, 0
        w, b = self._win, self._base
        for i in range(min(len(w.n), len(b.n))):
            if w.n[i] < need_win or b.n[i] < need_base:
                continue
            members += 1
            drift = w.sum[i] / w.n[i] - b.sum[i] / b.n[i]
            if self.direction == "below":
                drift = -drift
            elif self.direction == "either":
                drift = abs(drift)
            if drift > best:
                best, best_i = drift, i
            if drift >= self.z / 2:
                count += 1
        if best_i < 0 or members < 5:
            return Drift(t, 0.0)
        # Many members moving half as far together is the fleet changing, not one falling behind.
        if count > max(1, math.floor(self.most * members)):
            return Drift(t, 0.0)
        value = w.vsum[best_i] / w.vn[best_i] if w.vn[best_i] else math.nan
        median = self._win_median / self._nwin if self._nwin else math.nan
        return Drift(t, best, member_name(self.members[best_i], self.device_word), value, median)


class _Sums:
    """Per member: sum and count of scores (and of values) over a set of columns."""

    def __init__(self) -> None:
        self.sum = array("d")
        self.n = array("d")
        self.vsum = array("d")
        self.vn = array("d")

    def _grow(self, n: int) -> None:
        extra = n - len(self.sum)
        if extra > 0:
            for a in (self.sum, self.n, self.vsum, self.vn):
                a.extend([0.0] * extra)

    def add(self, col: _Column, n: int, clip: float | None) -> None:
        self._grow(n)
        self._apply(col, 1.0, clip)

    def sub(self, col: _Column, clip: float | None) -> None:
        self._apply(col, -1.0, clip)

    def _apply(self, col: _Column, sign: float, clip: float | None) -> None:
        s, n, vs, vn = self.sum, self.n, self.vsum, self.vn
        for i, (score, value) in enumerate(zip(col.scores, col.values, strict=True)):
            if score == score:
                if clip is not None:
                    score = max(-clip, min(clip, score))
                s[i] += sign * score
                n[i] += sign
                vs[i] += sign * value
                vn[i] += sign
