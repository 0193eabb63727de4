"""The bucket width of the ``slowdown`` rule (monitor/rules/slowdown.py), sized in steps: a bucket of the
configured ``bucket`` (300 s) holds 150 steps at 2 s a step, half the cycle of a run whose speed swings
every few hundred steps, and buckets that long cannot show the cycle (nor catch a slowdown within its
quarter hour). The width is decided once per baseline, when its first bucket closes (the run's cadence
then known: the median step time of its values, or its span over its steps for a throughput metric):
``STEPS`` steps of it, at least ``FLOOR`` seconds and at most the configured ``bucket``; a run at 10 s a
step or slower keeps the configured width (and all that follows is as before). The lengths given in
seconds (``warmup``, ``lag``, ``baseline``) keep their wall-clock meaning: their bucket counts follow the
width, and for narrow buckets the lag and warm-up are also reached by their seconds (a pause, a save or
an eval, stretches a narrow bucket). A narrow bucket's evidence is its share of ``bucket`` to the power
``EVIDENCE`` (between independent buckets, 1, and the slow wander that a narrow bucket shares with its
neighbours, 0): a slow swing gathers no more evidence per hour than in wide buckets, a slowdown a little
more. The width is kept across a restart that keeps the baseline, decided again when the baseline is
learned afresh, and kept in the detector's snapshot (its attributes). Pure computation."""

from __future__ import annotations

import math
from collections import deque

from monitor.rules.windows import median_of_sorted

STEPS = 30  # a bucket spans about this many steps ...
FLOOR = 60.0  # ... and at least this many seconds (at most the configured ``bucket``)
EVIDENCE = 0.75  # a narrow bucket counts for (its width / ``bucket``) ** EVIDENCE of a wide one


def width_for(cadence: float, configured: float) -> float:
    """The bucket width for a run at ``cadence`` seconds a step."""
    return max(min(FLOOR, configured), min(configured, STEPS * cadence))


class SlowdownWidth:
    """A part of ``SlowdownDetector`` (which inherits it)."""

    __slots__ = ()

    def _size(self, width: float) -> None:
        """Bucket counts (warm-up, lag, baseline) for buckets ``width`` seconds wide; the windows keep
        what they hold (their newest buckets)."""
        rule = self.rule
        self._width = width
        self._scale = (width / rule.bucket) ** EVIDENCE
        self._need = max(3, math.ceil(rule.warmup / width))
        self._lagged = math.ceil(rule.lag / width)
        self.recent = self.recent[-(self._lagged + 2) :]
        size = self.cap = max(self._need, math.ceil(rule.baseline / width))
        self.base = self.base[-size:]
        self.base_n = self.base_n[-size:]
        self.held = self.held[-size:]
        self.season.resize(3 * size)

    def import_state(self, data: dict) -> bool:
        if not super().import_state(data):  # type: ignore[misc] - Detector's
            return False
        self._lists()  # a snapshot written before: its windows as deques
        return True

    def _lists(self) -> None:
        """A snapshot written before the windows were lists holds them as deques, their ``maxlen`` the
        bounds (``cap``; recent's is the lag + 2): read back as lists of the same values."""
        if isinstance(self.base, deque):
            self.cap = self.base.maxlen
            self.recent, self.base, self.base_n, self.held = (
                list(self.recent),
                list(self.base),
                list(self.base_n),
                list(self.held),
            )

    def _decide_width(self, t: float) -> None:
        """The first bucket of a baseline closes at ``t``: size the buckets to the run's cadence."""
        self.sized = True
        if self._metric is None:
            cadence = median_of_sorted(sorted(self.values))
        else:
            steps = self.pos_last - self.pos_open if self.pos_open is not None else 0.0
            cadence = (t - self.bucket_start[0]) / steps if steps > 0 else self.rule.bucket
        width = width_for(cadence, self.rule.bucket)
        if width != self._width:
            self._size(width)

    def _lagging(self, newest: list[float]) -> bool:
        """Does the oldest recent bucket still wait out the lag? ``lag`` over the bucket width buckets, or
        for buckets narrower than ``bucket``, ``lag`` seconds: a pause (a save, an eval) that holds up a
        narrow bucket would otherwise stretch the lag far beyond its seconds."""
        recent = self.recent
        if len(recent) > self._lagged:
            return False
        return not (self._scale < 1 and len(recent) > 1 and newest[0] - recent[0][0] >= self.rule.lag)

    def _warm(self) -> bool:
        """Has the baseline its warm-up: ``warmup`` over the width buckets, or for buckets narrower than
        ``bucket``, ``warmup`` seconds of them (the pauses between them stretch them as for the lag)."""
        if len(self.base) >= self._need:
            return True
        return self._scale < 1 and len(self.base) >= 3 and self.base_to - self.base_since >= self.rule.warmup

    def _settled(self) -> bool:
        """Is the young baseline level (its first and last thirds within shift/4 of each other), or
        as long as it gets? Judging against a level still on the move would take a swing for a drop."""
        if len(self.base) == self.cap:
            return True
        return self.drift <= self.rule.shift / 4 and sum(self.base_n) >= self.rule.warmup_steps
