"""``threshold``: a metric above or below a bound.

Modes: ``latest`` (the newest value), ``mean`` (the mean over ``window``) or ``fraction`` (more than a
``fraction`` of the window's samples beyond the bound: one zero after a restart cannot trip it).
Windows end at the newest sample and need ``min_samples`` samples spanning ``min_span``; a window
that holds fewer (a run logging every 100 s has 6 values in 10 minutes) reaches back to its newest
``min_samples`` values (never further than ``stale_after``: older values are too old to judge):
evidence is counted in values, whatever the run's cadence. Samples
before step ``after_step`` are ignored (early training, where e.g. grad norms are large by nature).
A threshold with no bound is off: per-run settings such as a tokens/s floor stay off until set.
With no sample for ``stale_after`` the condition lapses (the data is too old to judge).

Windows are kept as 60 time buckets of counts and sums (amortised O(1) per sample, bounded memory).
The window is judged when a sample opens a new bucket, over the closed buckets and that sample: a
window's edge, and the moment a change is noticed, are exact to 1/60 of the window (15s of 15m).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, model_validator

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import RAN_OUT, Detector, Stop, fmt_value, register
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample

INF = math.inf
BUCKETS = 60


class ThresholdSpec(RuleSpec):
    kind: Literal["threshold"] = "threshold"
    metric: str
    above: float | None = Field(default=None, description="fires when the value is above this")
    below: float | None = Field(default=None, description="fires when the value is below this")
    mode: Literal["latest", "mean", "fraction"] = "latest"
    window: Duration = Field(default=900.0, gt=0, description="mean and fraction: the trailing window")
    fraction: float = Field(default=0.5, ge=0, lt=1, description="fraction: share of samples beyond")
    min_samples: int = Field(default=1, ge=1, description="samples the window needs before judging")
    min_span: Duration = Field(default=0.0, description="time the window's samples must span")
    after_step: int = Field(default=0, ge=0, description="ignore samples before this step")
    stale_after: Duration = Field(default=1800.0, description="no sample for this long: lapse (0: never)")

    @model_validator(mode="after")
    def _bounds(self) -> ThresholdSpec:
        if self.above is not None and self.below is not None and self.below > self.above:
            raise ValueError("'below' above 'above' would always fire: check the bounds")
        return self

    @property
    def off(self) -> bool:
        return self.above is None and self.below is None


@register
class ThresholdDetector(Detector[ThresholdSpec]):
    kind = "threshold"
    spec_model = ThresholdSpec

    # fmt: off
    __slots__ = (
        "metric", "_above", "_below", "_windowed", "_mean", "_after", "_width", "_buckets", "_b", "_bt",
        "_bn", "_bsum", "_bbeyond", "_n", "_sum", "_beyond", "_sample", "cond", "figure", "_since", "span",
    )
    # fmt: on

    def __init__(self, rule: ThresholdSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.metric = rule.metric
        self._above = rule.above if rule.above is not None else INF
        self._below = rule.below if rule.below is not None else -INF
        self._windowed = rule.mode != "latest"
        self._mean = rule.mode == "mean"
        self._after = rule.after_step
        self._width = rule.window / BUCKETS
        # closed: index, first t, n, sum, beyond of each, oldest first, as one array of doubles (40 bytes a
        # bucket; a tuple of five took ~150)
        self._buckets = array("d")
        self._b = -INF  # the open bucket: index, first t, count, sum, beyond
        self._bt = 0.0
        self._bn = 0
        self._bsum = 0.0
        self._bbeyond = 0
        self._n = 0  # totals over the closed buckets
        self._sum = 0.0
        self._beyond = 0
        self._sample: Sample | None = None  # the newest sample with a usable value
        self.cond = False
        self.figure: float | None = None  # the newest value, window mean or share beyond
        self._since: tuple[float, int | None] | None = None  # latest mode: the first value of this breach
        self.span = 0.0  # the time the window's values span (more than the window for a slow run)

    def import_state(self, data: dict) -> bool:
        if not super().import_state(data):
            return False
        if type(self._buckets) is not array:  # written before: a list (or a deque) of 5-tuples
            self._buckets = array("d", [x for b in self._buckets for x in b])
        return True

    @property
    def last(self) -> tuple[float, float, int | None] | None:
        s = self._sample
        return None if s is None else (s.t, s.metrics[self.metric], s.step)

    def inputs(self) -> frozenset[str] | None:
        return frozenset() if self.rule.off else frozenset({self.metric})

    def observe(self, sample: Sample) -> None:
        v = sample.metrics.get(self.metric)
        if v is None or v - v:  # missing, NaN or Inf
            return
        if self._after and sample.step is not None and sample.step < self._after:
            return
        self._sample = sample
        if not self._windowed:
            was, self.cond = self.cond, v > self._above or v < self._below
            self.hot = self.cond
            if self.cond and not was:
                self._since = (sample.t, sample.step)
            self.figure = v
            return
        b = sample.t // self._width
        if b == self._b:  # the common case: accumulate, judge when the next bucket opens
            self._bn += 1
            self._bsum += v
            if v > self._above or v < self._below:
                self._bbeyond += 1
            return
        self._roll(b, sample.t, v)

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        if self.hot:
            return super().observe_many(samples, i, end)
        m, above, below, after = self.metric, self._above, self._below, self._after
        last = None
        if not self._windowed:
            for k in range(i, end):
                s = samples[k]
                v = s.metrics.get(m)
                if v is None or v - v or after and s.step is not None and s.step < after:
                    continue
                last = s
                if v > above or v < below:
                    self._sample, self.figure = s, v
                    self.cond = self.hot = True
                    self._since = (s.t, s.step)
                    return self._stop(samples, k + 1, end)
            if last is not None:
                self._sample, self.figure = last, last.metrics[m]
                self.cond = self.hot = False
            return end, RAN_OUT
        width = self._width
        ob, bn, bsum, beyond = self._b, self._bn, self._bsum, self._bbeyond
        # the open bucket's end: a sample before it is in the open bucket (the samples are in time order,
        # none before the open bucket's first); one at or after it is checked by its index (the product
        # may round down to a time still in the open bucket)
        edge = (ob + 1.0) * width
        # the loop does the least a sample: the open bucket's count is told from the indices (the samples
        # since ``first``, less the ``skipped`` ones), and the newest usable sample found after it
        first, skipped = i, 0
        for k in range(i, end):
            s = samples[k]
            v = s.metrics.get(m)
            if v is None or v - v or after and s.step is not None and s.step < after:
                skipped += 1
                continue
            t = s.t
            if t < edge or t // width == ob:  # the common case: accumulate
                bsum += v
                if v > above or v < below:
                    beyond += 1
                continue
            self._bn, self._bsum, self._bbeyond = bn + k - first - skipped, bsum, beyond
            self._roll(t // width, t, v)
            ob, bn, bsum, beyond = self._b, self._bn, self._bsum, self._bbeyond
            first, skipped = k + 1, 0
            edge = (ob + 1.0) * width
            if self.hot:
                self._sample = s
                return self._stop(samples, k + 1, end)
        self._bn, self._bsum, self._bbeyond = bn + end - first - skipped, bsum, beyond
        if skipped < end - i:  # (else no usable sample: the newest stays)
            self._sample = self._newest(samples, i, end)
        return end, RAN_OUT

    def _newest(self, samples: Sequence[Sample], i: int, end: int) -> Sample | None:
        """The newest sample of ``samples[i:end]`` with a usable value (as ``observe`` takes them)."""
        m, after = self.metric, self._after
        for k in range(end - 1, i - 1, -1):
            s = samples[k]
            v = s.metrics.get(m)
            if not (v is None or v - v or after and s.step is not None and s.step < after):
                return s
        return None

    def _roll(self, b: float, t: float, v: float) -> None:
        """A sample opens a new bucket: close the open one, drop old ones, judge the window."""
        buckets, rule = self._buckets, self.rule
        total_n, total_sum, total_beyond = self._n, self._sum, self._beyond
        bn = self._bn
        if bn:
            bsum, bbeyond = self._bsum, self._bbeyond
            buckets.extend((self._b, self._bt, bn, bsum, bbeyond))
            total_n += bn
            total_sum += bsum
            total_beyond += bbeyond
        oldest = b - BUCKETS
        min_samples = rule.min_samples
        if buckets and buckets[0] < oldest:
            need = min_samples - 1  # the new value counts too
            stale = None  # (worked out only when the window's count would fall short)
            i, end = 0, len(buckets)
            while i < end:
                if buckets[i] >= oldest:
                    break
                n_i = int(buckets[i + 2])
                if total_n - n_i < need:  # an old bucket kept for its values, unless stale
                    if stale is None:
                        reach, window = rule.stale_after or INF, rule.window
                        stale = t - (reach if reach > window else window)  # never reach back further
                    if buckets[i + 1] >= stale:
                        break
                total_n -= n_i
                total_sum -= buckets[i + 3]
                total_beyond -= int(buckets[i + 4])
                i += 5
            if i:
                del buckets[:i]
        if not buckets:
            total_n, total_sum, total_beyond = 0, 0.0, 0  # no drift from float sums
        self._n, self._sum, self._beyond = total_n, total_sum, total_beyond
        above, below = self._above, self._below
        bbeyond = 1 if v > above or v < below else 0
        self._b, self._bt, self._bn, self._bsum, self._bbeyond = b, t, 1, v, bbeyond
        n = total_n + 1
        self.span = span = t - (buckets[1] if buckets else t)
        if n >= min_samples and span >= rule.min_span:
            if self._mean:
                mean = self.figure = (total_sum + v) / n
                cond = mean > above or mean < below
            else:
                share = self.figure = (total_beyond + bbeyond) / n
                cond = share > rule.fraction
        else:
            self.figure = None
            cond = False
        self.cond = self.hot = cond

    def holds_until(self) -> float:
        if not self.rule.stale_after or self._sample is None:
            return math.inf
        return self._sample.t + self.rule.stale_after  # then the data is too old to judge

    def _bound_text(self) -> str:
        r = self.rule
        parts = []
        if r.above is not None:
            parts.append(f"above {fmt_value(r.above)}")
        if r.below is not None:
            parts.append(f"below {fmt_value(r.below)}")
        return " or ".join(parts)

    def evaluate(self, now: float) -> Finding:
        r = self.rule
        m = self.metric
        if r.off:
            return Finding(False, reason=f"{m}: no bound set (rule is off)")
        if self.last is None:
            return Finding(False, reason=f"no {m} yet")
        t, v, step = self.last
        bound = r.above if r.above is not None and (r.below is None or v > r.below) else r.below
        if r.stale_after and now - t > r.stale_after:
            return Finding(
                False, value=v, threshold=bound, step=step, reason=f"no {m} for {format_duration(now - t)}"
            )
        bounds = self._bound_text()
        if r.mode == "latest":
            at = f" at step {step}" if step is not None else ""
            verdict = bounds if self.cond else f"within bounds ({bounds} fires)"
            since = self._since if self.cond else None
            return Finding(
                self.cond,
                value=v,
                threshold=bound,
                step=step,
                reason=f"{m} {fmt_value(v)}{at} {verdict}",
                onset=since[0] if since else None,
                onset_step=since[1] if since else None,
            )
        win = format_duration(max(r.window, self.span))
        if self.figure is None:
            return Finding(
                False, value=v, threshold=bound, step=step, reason=f"{m}: too few samples in {win}"
            )
        if r.mode == "mean":
            reason = f"{m} mean {fmt_value(self.figure)} over {win}, " + (
                bounds if self.cond else f"within bounds ({bounds} fires)"
            )
            return Finding(
                self.cond, value=self.figure, threshold=bound, step=step, reason=reason, onset=self._onset()
            )
        share = round(100 * self.figure)
        reason = f"{m} {bounds} in {share}% of samples over {win} (fires above {round(100 * r.fraction)}%)"
        return Finding(self.cond, value=v, threshold=bound, step=step, reason=reason, onset=self._onset())

    def _onset(self) -> float | None:
        """A windowed verdict's onset: the start of the oldest bucket of its window holding a value beyond
        the bound."""
        if not self.cond:
            return None
        b = self._buckets
        first = next((b[i + 1] for i in range(0, len(b), 5) if b[i + 4]), None)
        return first if first is not None else self._bt
