"""``trend``: a metric rising (or falling) steadily, with no single spike: a slow divergence.

Values are summarised in time buckets by their median (a spike moves one bucket at most), on a log
scale by default so that a rise is relative. The rule looks at the last ``window`` and at windows 4
and 16 times as long (``scales``: a run that takes 10 s a step diverges over hours, not minutes),
each kept as ``buckets`` buckets (a longer window's buckets are medians of the shorter one's). It
fires when, over one of them:

- the rise is large: the Theil-Sen slope of the buckets times the window's span is at least
  max(``min_rise``, ``z`` x the bucket noise), the noise being estimated from bucket-to-bucket
  differences (a trend does not inflate it);
- the rise is steady: Kendall's tau of the buckets against time is at least ``tau`` (1: each bucket
  higher than every earlier one; a loss that bumps and comes back, or noise, is near 0).

A healthy loss falls or stays flat; one that climbs steadily for half an hour is diverging. A window
needs 30% of its buckets (saves and evals leave some empty), spanning most of it, before it can
tell. A step rewind (a restart from a checkpoint) starts afresh.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import Detector, fmt_value, register
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import MAD_TO_SIGMA, median_of_sorted
from monitor.samples import Sample

SPAN = 0.8  # a window's buckets must span this share of it
FILLED = 0.3  # ... and be this share of its buckets (pauses leave some empty)
MAX_VALUES = 4096  # values an open bucket holds at most


class TrendSpec(RuleSpec):
    kind: Literal["trend"] = "trend"
    metric: str
    direction: Literal["up", "down"] = Field(default="up", description="which way is bad")
    scale: Literal["log", "linear"] = Field(default="log", description="log: a relative rise (values > 0)")
    window: Duration = Field(default=1800.0, gt=0, description="the shortest period a trend is judged over")
    scales: int = Field(default=3, ge=1, le=4, description="also windows 4x, 16x, ... as long")
    buckets: int = Field(default=30, ge=9, le=256, description="buckets per window")
    min_points: int = Field(default=2, ge=1, description="values a bucket needs (else it grows)")
    min_rise: float = Field(default=0.02, gt=0, description="the rise that counts (log: 0.02 is ~2%)")
    z: float = Field(default=4.0, gt=0, description="... and at least this many sigmas of bucket noise")
    tau: float = Field(default=0.5, gt=0, le=1, description="how steady: Kendall's tau of the buckets")


class _Window:
    """One time scale: its open bucket and its closed buckets [t, step, median]."""

    def __init__(self, length: float, buckets: int) -> None:
        self.length = length
        self.width = length / buckets
        self.open: list | None = None  # [t, step] of the open bucket's first value
        self.values: list[float] = []
        self.close_at = -math.inf  # the open bucket closes at the first value from then on
        self.buckets: deque[list] = deque(maxlen=buckets + 2)
        self.rise = self.tau = 0.0
        self.hit = False  # its latest judgement

    def ready(self, buckets: int) -> bool:
        b = self.buckets
        return len(b) >= FILLED * buckets and b[-1][0] - b[0][0] >= SPAN * self.length


@register
class TrendDetector(Detector[TrendSpec]):
    kind = "trend"
    spec_model = TrendSpec

    def __init__(self, rule: TrendSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.metric = rule.metric
        self._sign = 1.0 if rule.direction == "up" else -1.0
        self._log = rule.scale == "log"
        self.windows = [_Window(rule.window * 4**k, rule.buckets) for k in range(rule.scales)]
        self.first = self.windows[0]
        self.last_t: float | None = None  # the newest value, its time and step
        self.last_step: int | None = None
        self.last_value: float | None = None
        self.cond = False
        self.hit: _Window | None = None  # the window whose trend fired
        self.resets = 0

    def observe(self, sample: Sample) -> None:
        v = sample.metrics.get(self.metric)
        if v is None or v - v or (self._log and v <= 0):
            return
        t, step = sample.t, sample.step
        last_step = self.last_step
        if step is not None and last_step is not None and step < last_step:
            for w in self.windows:  # a rewind: the run restarted from a checkpoint
                w.buckets.clear()
                w.values, w.open, w.hit, w.close_at = [], None, False, -math.inf
            self.cond = self.hot = False
            self.resets += 1
        self.last_t, self.last_step, self.last_value = t, step, v
        w = self.first  # raw values: the median of the logs is the log of the median
        if t < w.close_at and len(w.values) < MAX_VALUES:
            w.values.append(v)  # the common case (no bucket open: close_at is -inf)
        elif (b := self._add(w, t, step, v, self.rule.min_points)) is not None:
            # the shortest window's buckets are the values of the longer ones (medians of medians)
            for longer in self.windows[1:]:
                self._add(longer, b[0], b[1], b[2], 1)
            self.hit = next((w for w in self.windows if w.hit), None)
            self.cond = self.hot = self.hit is not None

    def _add(self, w: _Window, t: float, step: int | None, x: float, min_points: int) -> list | None:
        """One value into window ``w``; the bucket it closed, if any (the window is then judged)."""
        closed = None
        if w.open is not None and (
            t >= w.close_at and len(w.values) >= min_points or len(w.values) >= MAX_VALUES
        ):
            mid = median_of_sorted(sorted(w.values))
            if w is self.windows[0]:  # raw values: to the judged scale
                mid = self._sign * (math.log(mid) if self._log else mid)
            closed = [*w.open, mid]
            w.buckets.append(closed)
            w.values, w.open = [], None
            while w.buckets and w.buckets[0][0] < t - w.length:
                w.buckets.popleft()
            w.hit = self._judge(w)
        if w.open is None:
            w.open, w.close_at = [t, step], t + w.width
        w.values.append(x)
        return closed

    def _judge(self, w: _Window) -> bool:
        if not w.ready(self.rule.buckets):
            return False
        pts = [(b[0], b[2]) for b in w.buckets]
        n, third = len(pts), len(pts) // 3
        first, last = sorted(y for _, y in pts[:third]), sorted(y for _, y in pts[-third:])
        if median_of_sorted(last) <= median_of_sorted(first):
            w.rise = w.tau = 0.0
            return False  # not rising at all (a healthy loss): spare the O(n^2) statistics
        slopes = sorted(
            (y2 - y1) / (t2 - t1) for i, (t1, y1) in enumerate(pts) for t2, y2 in pts[i + 1 :] if t2 > t1
        )
        w.rise = median_of_sorted(slopes) * (pts[-1][0] - pts[0][0]) if slopes else 0.0
        diffs = sorted(abs(b[1] - a[1]) for a, b in zip(pts, pts[1:], strict=False))
        noise = MAD_TO_SIGMA * median_of_sorted(diffs) / math.sqrt(2)
        if w.rise < max(self.rule.min_rise, self.rule.z * noise):
            return False
        ys = [y for _, y in pts]
        concordant = sum((ys[j] > ys[i]) - (ys[j] < ys[i]) for i in range(n) for j in range(i + 1, n))
        w.tau = concordant / (n * (n - 1) / 2)
        return w.tau >= self.rule.tau

    def evaluate(self, now: float) -> Finding:
        m = self.metric
        if self.last_t is None:
            return Finding(False, reason=f"no {m} yet")
        step, v = self.last_step, self.last_value
        if not self.windows[0].ready(self.rule.buckets):
            return Finding(False, unknown=True, value=v, step=step, reason=f"{m}: filling the trend window")
        rose, rising = ("rose", "rising") if self._sign > 0 else ("fell", "falling")
        w = self.hit
        if not self.cond or w is None:
            return Finding(False, value=v, step=step, reason=f"{m} is not {rising} steadily")
        size = f"{(math.exp(w.rise) - 1) * 100:.1f}%" if self._log else fmt_value(w.rise)
        first = w.buckets[0]
        steps = f" (steps {first[1]} to {step})" if first[1] is not None and step is not None else ""
        reason = (
            f"{m} {rose} steadily by {size} over the last {format_duration(w.buckets[-1][0] - first[0])}"
            f"{steps}, now {fmt_value(v)} (tau {w.tau:.2f}): diverging"
        )
        return Finding(True, value=v, threshold=self.rule.min_rise, step=step, reason=reason)

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    def stats(self) -> dict[str, float | int | None]:
        w = self.windows[0]
        return {"rise": w.rise, "tau": w.tau}
