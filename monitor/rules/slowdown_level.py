"""The ``slowdown`` rule's thresholds (monitor/rules/slowdown.py), and its level CUSUM kept beside the
cycle's: while the rule judges a run against its own cycle, the CUSUM against the level baseline runs as
it did before the cycle was found, and fires when it crosses its threshold while the cycle's CUSUM is
above 0 too (the bucket is slower than the cycle expects: a run back in its own slow phase is not, and
a carried level baseline after a restart would page it). Pure computation."""

from __future__ import annotations

import math

CAP = 1.5  # S is capped at this x the threshold, so that a recovery is seen in bounded time
SUSTAINED = 1.5  # buckets of evidence an excursion against the run's cycle needs to fire


class LevelWatch:
    """The level CUSUM while the cycle's is the rule's: S, its peak, and the excess it summed."""

    __slots__ = ("s", "peak", "excess")

    def __init__(self) -> None:
        self.s = self.peak = 0.0
        self.excess = [0.0, 0.0]  # sum of w (x - level), and of w, since S left 0

    def clear(self) -> None:
        self.s = self.peak = 0.0
        self.excess = [0.0, 0.0]

    def add(self, dev: float, w: float, k: float, threshold: float) -> None:
        s = self.s + w * (dev - k)
        if s <= 0:
            self.clear()
            return
        self.s = min(s, CAP * threshold)
        self.peak = max(self.peak, s)
        self.excess[0] += w * dev
        self.excess[1] += w


class SlowdownThresholds:
    """A part of ``SlowdownDetector`` (which inherits it)."""

    __slots__ = ()

    def level_threshold(self) -> float:
        """max(h x shift x sqrt(need / n), z x sigma, swing) for a level baseline of n buckets: the
        floor guards against what the baseline's spread cannot show (a young baseline caught in part of
        a slow swing) and shrinks as the baseline's own error does (1/sqrt(n)), never below what the
        run's measured noise needs, nor below the evidence of the largest swing it came back from."""
        rule = self.rule
        n = max(len(self.base), self._need)
        floor = rule.h * (rule.shift * math.sqrt(self._need / n) + self.drift)
        return max(floor, rule.z * self.sigma, self.swing)

    def threshold(self) -> float:
        """Against the run's cycle: the same, of its residuals (spread, drift, swing); else the level's."""
        season = self.season
        if season.period is None:
            return self.level_threshold()
        rule = self.rule
        n = max(season.n, self._need)
        floor = rule.h * (rule.shift * math.sqrt(self._need / n) + season.drift)
        return max(floor, rule.z * season.sigma, season.swing)

    def _sustained(self, weight: float) -> bool:
        """Against the run's cycle, an excursion fires only once it holds SUSTAINED buckets of evidence: the
        cycle's finer shape (a few slow steps) falls in one bucket or the next, and one bucket off is its
        phase, not a slowdown (buckets of the width in use: a narrower bucket knows the phase finer)."""
        return self.season.period is None or weight >= SUSTAINED * self._scale
