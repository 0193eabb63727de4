"""Stragglers: a member of the fleet that moved away from the fleet, compared with its own past.

At every timestamp of a fleet metric each member gets its score against the fleet (``score.spread``:
distance from the fleet median in robust sigmas). A member's drift is its mean score over the recent
``window`` minus its own normal score: the mean of its scores before the window (a running mean over
the first ``baseline``, then an exponential average with that time constant; past scores clipped to
+-``CLIP``). Rank 0, a pipeline stage or a GPU in a hot slot that has always read differently drifts
by about 0; a GPU that starts throttling drifts by its new distance. While a member is off its normal
(drift at least ``z / 2``) its normal is frozen: a GPU that stays slow stays a straggler instead of
becoming the new normal, and one that recovers drifts back to 0.

The oddest drift in the rule's direction is the track's output, unless more than ``most`` of the fleet
is off its normal at once (the fleet changed: not one straggler).

Memory: the scores of the last ``window`` and one normal per member; work: O(members) per timestamp.
After a restart of herowatch the track is rebuilt from the stored raster (``monitor.engine.fleet``).
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
        self._cols: deque[_Column] = deque()  # the window
        self.level = 0.0
        self.newest = -math.inf
        self._sum = array("d")  # per member, over the window: score sum and count, value sum
        self._n = array("d")
        self._vsum = array("d")
        self._median = 0.0  # sum of the window's fleet medians
        self._normal = array("d")  # per member: its normal score, and how many scores taught it
        self._taught = array("d")
        self._off = array("b")  # per member: off its normal now (its normal is frozen)

    def add(self, t: float, members: Sequence[Member], values: Sequence[float]) -> Drift | None:
        """Take one timestamp's values (in ``members`` order) and return the drift at ``t``; None for a
        timestamp not newer than the last one taken (read again: it changes nothing)."""
        if t <= self.newest:
            return None
        self.newest = t
        for m in members:
            if m not in self._index:
                self._index[m] = len(self.members)
                self.members.append(m)
        n = len(self.members)
        if len(self._sum) < n:
            extra = n - len(self._sum)
            for a in (self._sum, self._n, self._vsum, self._normal, self._taught):
                a.extend([0.0] * extra)
            self._off.extend([0] * extra)
        row = array("d", [math.nan]) * n
        for m, v in zip(members, values, strict=False):
            row[self._index[m]] = v
        sp = spread(row, self.level, self.least)
        self.level = max(self.level, magnitude(row))
        if sp is None:
            return Drift(t, 0.0)
        col = _Column(t, array("d", scores(row, sp)), row, sp.median)
        self._cols.append(col)
        self._window(col, 1.0)
        while self._cols and self._cols[0].t <= t - self.window:
            old = self._cols.popleft()
            self._window(old, -1.0)
            self._teach(old)
        return self._drift(t)

    def _window(self, col: _Column, sign: float) -> None:
        s, n, vs = self._sum, self._n, self._vsum
        for i, (score, value) in enumerate(zip(col.scores, col.values, strict=True)):
            if score == score:
                s[i] += sign * score
                n[i] += sign
                vs[i] += sign * value
        self._median += sign * col.median

    def _teach(self, col: _Column) -> None:
        """A column leaving the window teaches the normal of every member that is not off it."""
        cap = max(1.0, self.baseline / self.step)
        normal, taught, off = self._normal, self._taught, self._off
        for i, score in enumerate(col.scores):
            if score != score or off[i]:
                continue
            k = taught[i] + 1.0
            normal[i] += (max(-CLIP, min(CLIP, score)) - normal[i]) / min(k, cap)
            taught[i] = k

    def _drift(self, t: float) -> Drift:
        need_win = max(1.0, 0.5 * self.window / self.step)
        need_base = max(1.0, 0.5 * self.baseline / self.step)
        best, best_i, moved, members = 0.0, -1, 0, 0
        s, n, normal, taught, off = self._sum, self._n, self._normal, self._taught, self._off
        for i in range(len(s)):
            if n[i] < need_win or taught[i] < need_base:
                continue
            members += 1
            drift = s[i] / n[i] - normal[i]
            off[i] = abs(drift) >= self.z / 2
            moved += off[i]
            if self.direction == "below":
                drift = -drift
            elif self.direction == "either":
                drift = abs(drift)
            if drift > best:
                best, best_i = drift, i
        if best_i < 0 or members < 5 or moved > max(1, math.floor(self.most * members)):
            return Drift(t, 0.0)
        value = self._vsum[best_i] / n[best_i]
        median = self._median / len(self._cols)
        return Drift(t, best, member_name(self.members[best_i], self.device_word), value, median)
