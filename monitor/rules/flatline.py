"""``flatline``: a metric that stopped moving, judged against how much it moved before (an RL reward
stuck at one value: a broken reward function, or a task solved so that no group has any advantage).

The run's own movement is the median absolute change between consecutive values over the ``baseline``
period before the recent window; the recent movement is the range (max - min) of the values in the
last ``window``. The condition holds while that range is at most ``ratio`` x the usual change, judged
at each sample once the window holds ``min_points`` values spanning half of it and the baseline
``min_baseline`` changes. A range of several values is at least as large as a typical change between
two of them, so a metric that still moves never qualifies; one that never moved at all (every change 0)
is flat from the start. Works at any cadence: an RL step may take seconds or many minutes (a window
holding fewer than ``min_points`` values reaches back to the newest ``min_points``: evidence is
counted in values).

While the condition holds the baseline is frozen (the flat stretch must not become the normal); a step
rewind resets everything; with no value for ``window`` the condition lapses (a metric that is gone is
the absent rule's business). Per sample amortised O(1) plus O(log B) for the baseline's sorted list.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import Detector, fmt_value, register
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import MAX_WINDOW, SortedValues, take_first
from monitor.samples import Sample

INF = math.inf


class FlatlineSpec(RuleSpec):
    kind: Literal["flatline"] = "flatline"
    metric: str
    window: Duration = Field(default=1800.0, gt=0, description="the recent window whose movement is judged")
    ratio: float = Field(
        default=0.05, ge=0, lt=1, description="flat: the window's range is at most this x the usual change"
    )
    baseline: Duration = Field(default=7200.0, gt=0, description="the period the usual change comes from")
    min_points: int = Field(default=5, ge=2, description="values the window needs")
    min_baseline: int = Field(default=10, ge=3, description="warm-up: changes the baseline needs")
    max_points: int = Field(default=1024, ge=8, le=MAX_WINDOW, description="bound on the baseline's changes")


@register
class FlatlineDetector(Detector[FlatlineSpec]):
    kind = "flatline"
    spec_model = FlatlineSpec

    __slots__ = ("metric", "_last_step", "_sample", "cond", "_win", "_hi", "_lo", "_base", "_baseq", "_prev")

    def __init__(self, rule: FlatlineSpec, run: str) -> None:
        super().__init__(rule, run)
        self.metric = rule.metric
        self._last_step: int | None = None
        self._sample: Sample | None = None
        self._reset()

    def _reset(self) -> None:
        self.hot = self.cond = False
        # the windows are lists, oldest first (``windows.take_first``): an empty deque costs 624 bytes
        self._win: list[tuple[float, float, float | None]] = []  # (t, value, change from the previous)
        self._hi: list[tuple[float, float]] = []  # monotonic: the window's maximum first
        self._lo: list[tuple[float, float]] = []  # monotonic: the window's minimum first
        self._base = SortedValues()  # the baseline's changes
        self._baseq: list[tuple[float, float]] = []  # (t, change), oldest first
        self._prev: float | None = None

    # ---- samples ---------------------------------------------------------------------------
    def observe(self, sample: Sample) -> None:
        v = sample.metrics.get(self.metric)
        if v is None or v - v:  # missing, NaN or Inf
            return
        step = sample.step
        if step is not None:
            if self._last_step is not None and step < self._last_step:
                self._reset()
            self._last_step = step
        t = sample.t
        self._sample = sample
        change = abs(v - self._prev) if self._prev is not None else None
        self._prev = v
        self._win.append((t, v, change))
        while self._hi and self._hi[-1][1] <= v:
            self._hi.pop()
        self._hi.append((t, v))
        while self._lo and self._lo[-1][1] >= v:
            self._lo.pop()
        self._lo.append((t, v))
        self._slide(t)
        self.cond = self.hot = self._judge(t)

    def _slide(self, t: float) -> None:
        r, win, values = self.rule, self._win, self._base.values
        edge = t - r.window
        frozen = self.cond
        while win[0][0] < edge and len(win) > r.min_points:  # a slow run's window keeps min_points
            t0, _, change = take_first(win)
            if change is not None and not frozen:
                insort(values, change)
                self._baseq.append((t0, change))
        first = win[0][0]
        for q in (self._hi, self._lo):
            while q[0][0] < first:
                del q[0]
        if frozen:
            return
        oldest = edge - r.baseline
        q = self._baseq
        while q and (q[0][0] < oldest or len(q) > r.max_points):
            del values[bisect_left(values, take_first(q)[1])]

    def _usual(self) -> float | None:
        return self._base.median() if len(self._base) >= self.rule.min_baseline else None

    def _judge(self, t: float) -> bool:
        usual = self._usual()
        win = self._win
        if usual is None or len(win) < self.rule.min_points or t - win[0][0] < self.rule.window * 0.5:
            return False
        return self._hi[0][1] - self._lo[0][1] <= self.rule.ratio * usual

    # ---- the verdict -----------------------------------------------------------------------
    def holds_until(self) -> float:
        return self._sample.t + self.rule.window if self._sample is not None else -INF

    def evaluate(self, now: float) -> Finding:
        r, m, s = self.rule, self.metric, self._sample
        if s is None:
            return Finding(False, reason=f"no {m} yet")
        v, step = s.metrics[m], s.step
        usual = self._usual()
        if usual is None:
            have = len(self._base)
            return Finding(
                False, value=v, step=step, reason=f"{m}: learning how it moves ({have}/{r.min_baseline})"
            )
        if now - s.t > r.window:
            return Finding(
                False, value=v, step=step, reason=f"{m}: no value for {format_duration(now - s.t)}"
            )
        spread = self._hi[0][1] - self._lo[0][1]
        span = format_duration(s.t - self._win[0][0])
        if spread == 0:
            what = f"{m} has not changed for {span} (stuck at {fmt_value(v)})"
        else:
            what = f"{m} has moved by only {fmt_value(spread)} in {span}"
        reason = f"{what}; it usually changes by {fmt_value(usual)} from one value to the next"
        onset = self._win[0][0] if self.cond else None  # flat since the oldest value of its window
        return Finding(
            self.cond, value=spread, threshold=r.ratio * usual, step=step, reason=reason, onset=onset
        )

    def stats(self) -> dict[str, float | int | None]:
        if self._sample is None:
            return {"range": None, "usual_change": None}
        return {"range": self._hi[0][1] - self._lo[0][1], "usual_change": self._usual()}
