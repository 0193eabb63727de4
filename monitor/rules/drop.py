"""``drop``: a sustained relative drop against the run's own trailing baseline (throughput, MFU).

Values are averaged in time buckets of ``window / 10``. The recent level is the median of the bucket
means of the last ``window`` (at least ``min_points`` buckets); the baseline is the median of the
bucket means of the ``baseline`` period before it (at least ``min_baseline_points``, at most
``max_points``). Medians of bucket means: one terrible step (the first after a restore) moves one
bucket at most, and the median ignores it. The condition, judged as each bucket completes, holds
while recent <= (1 - ``drop``) x baseline; the rule's ``for`` makes it sustained. While it holds the
baseline is frozen (no admission, no ageing), so a slow GPU that stays slow keeps the alert up
instead of becoming the new normal. A step rewind (restart) or a gap of ``reset_gap`` resets the
baseline: after a restart the run may land on other hardware. Evidence is counted in values: the recent
level is the median of 10 bucket means, those of the last ``window`` or, where it holds fewer with data
(a run logging every 100 s has 3 in 5 minutes), the newest 10 with data (the baseline keeps at least
its newest ``min_baseline_points``).

Per sample: amortised O(1) (bucket sums); per bucket: O(log W) (sorted lists, windows.py).
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import RAN_OUT, Detector, Stop, fmt_value, register
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import MAX_WINDOW, SortedValues, take_first
from monitor.samples import Sample

INF = math.inf
RECENT_BUCKETS = 10


class DropSpec(RuleSpec):
    kind: Literal["drop"] = "drop"
    metric: str
    drop: float = Field(default=0.1, gt=0, lt=1, description="relative drop that counts, 0.1 = 10%")
    window: Duration = Field(default=300.0, gt=0, description="the recent window (median of bucket means)")
    min_points: int = Field(default=3, ge=1, description="buckets with data the recent window needs")
    baseline: Duration = Field(default=3600.0, gt=0, description="the trailing baseline period")
    min_baseline_points: int = Field(default=20, ge=3, description="warm-up: baseline buckets needed")
    max_points: int = Field(default=1024, ge=8, le=MAX_WINDOW, description="bound on the baseline buckets")
    reset_gap: Duration = Field(default=1800.0, description="a gap this long resets the baseline (0: never)")


@register
class DropDetector(Detector[DropSpec]):
    kind = "drop"
    spec_model = DropSpec

    # fmt: off
    __slots__ = (
        "metric", "_width", "_baseline_buckets", "_keep_factor", "_b", "_sum", "_count", "recent", "_recent",
        "base", "_base", "cond", "_sample", "_reset_gap", "_last_step", "resets", "low_since",
    )
    # fmt: on

    def __init__(self, rule: DropSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.metric = rule.metric
        self._width = rule.window / RECENT_BUCKETS
        self._baseline_buckets = max(1, math.ceil(rule.baseline / self._width))
        self._keep_factor = 1.0 - rule.drop
        self._b: float | None = None  # the open bucket: index, sum, count
        self._sum = 0.0
        self._count = 0
        self.recent = SortedValues()
        self._recent: list[tuple[int, float]] = []  # (bucket, mean), oldest first (windows.take_first)
        self.base = SortedValues()
        self._base: list[tuple[int, float]] = []
        self.cond = False
        self._sample: Sample | None = None  # the newest sample with a usable value
        self._reset_gap = rule.reset_gap
        self._last_step: int | None = None
        self.resets = 0
        self.low_since: float | None = None  # the start of the first bucket below the level it fires at

    @property
    def last(self) -> tuple[float, float, int | None] | None:
        s = self._sample
        return None if s is None else (s.t, s.metrics[self.metric], s.step)

    def reset(self) -> None:
        self.recent.clear()
        self._recent.clear()
        self.base.clear()
        self._base.clear()
        self._b, self._sum, self._count = None, 0.0, 0
        self.cond = self.hot = False
        self.low_since = None
        self.resets += 1

    def observe(self, sample: Sample) -> None:
        v = sample.metrics.get(self.metric)
        if v is None or v - v:  # missing, NaN or Inf
            return
        t, step = sample.t, sample.step
        if step is not None:
            if self._last_step is not None and step < self._last_step:
                self.reset()
            self._last_step = step
        last = self._sample
        if last is not None and self._reset_gap and t - last.t > self._reset_gap:
            self.reset()
        self._sample = sample
        b = t // self._width
        if b == self._b:
            self._sum += v
            self._count += 1
            return
        if self._b is not None:
            self._close(b)
        self._b, self._sum, self._count = b, v, 1

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        """Replay's batched path: a value into the open bucket (``observe``'s common case) in a loop on
        local copies of the bucket; a value that opens a bucket (or resets) through ``observe``."""
        m, width, gap = self.metric, self._width, self._reset_gap
        while i < end:
            if not (self.hot or self._b is None or self._sample is None):
                ob, total, count, last, step_then = (
                    self._b,
                    self._sum,
                    self._count,
                    self._sample,
                    self._last_step,
                )
                edge = (ob + 1.0) * width  # the open bucket's end (the bucket index only at and after it)
                for k in range(i, end):
                    s = samples[k]
                    v = s.metrics.get(m)
                    if v is not None and not v - v:
                        t, step = s.t, s.step
                        if step is not None and step_then is not None and step < step_then:
                            break  # a rewind
                        if gap and t - last.t > gap or t >= edge and t // width != ob:
                            break  # a reset, or a new bucket
                        if step is not None:
                            step_then = step
                        last = s
                        total += v
                        count += 1
                else:
                    k = end
                i = k
                self._sum, self._count, self._sample, self._last_step = total, count, last, step_then
            if i < end:  # not the common case: one sample through observe
                i, stop = self._uncommon(samples, i, end)
                if stop is not None:
                    return stop
        return i, RAN_OUT

    def _close(self, now_bucket: float) -> None:
        """The open bucket is complete: move the windows on and judge."""
        r = self.rule
        mean = self._sum / self._count
        rq, rvals, bq, bvals = self._recent, self.recent.values, self._base, self.base.values
        insort(rvals, mean)
        rq.append((self._b, mean))
        frozen = self.cond
        first_recent = now_bucket - RECENT_BUCKETS
        while rq and rq[0][0] < first_recent and len(rq) > RECENT_BUCKETS:  # a slow run's newest 10
            old_b, old = take_first(rq)
            del rvals[bisect_left(rvals, old)]
            if frozen:
                continue  # a dropped level must not become the new normal
            insort(bvals, old)
            bq.append((old_b, old))
            if len(bq) > r.max_points:
                del bvals[bisect_left(bvals, take_first(bq)[1])]
        if not frozen:
            first_base = first_recent - self._baseline_buckets
            while bq and bq[0][0] < first_base and len(bq) > r.min_baseline_points:
                del bvals[bisect_left(bvals, take_first(bq)[1])]
        cond = False
        if len(bq) >= r.min_baseline_points:  # the onset: the first of the buckets below it since
            below = mean <= self._keep_factor * self.base.median()
            self.low_since = (self.low_since or self._b * self._width) if below else None
        if len(rq) >= r.min_points and len(bq) >= r.min_baseline_points:
            cond = self.recent.median() <= self._keep_factor * self.base.median()
        self.cond = self.hot = cond

    def evaluate(self, now: float) -> Finding:
        r, m = self.rule, self.metric
        if self.last is None:
            return Finding(False, reason=f"no {m} yet")
        _, v, step = self.last
        if len(self.base) < r.min_baseline_points or len(self._recent) < r.min_points:
            return Finding(
                False,
                value=v,
                step=step,
                reason=f"{m}: building its baseline ({len(self.base)}/{r.min_baseline_points} buckets)",
            )
        level, base = self.recent.median(), self.base.median()
        threshold = self._keep_factor * base
        change = (level / base - 1.0) * 100 if base else 0.0
        reason = (
            f"{m} {fmt_value(level)} (median over {format_duration(self._span())}) is {change:+.0f}% against "
            f"its baseline {fmt_value(base)}"
        )
        if not self.cond:
            reason += f" (fires at -{round(r.drop * 100)}%)"
        onset = self.low_since if self.cond else None
        return Finding(self.cond, value=level, threshold=threshold, step=step, reason=reason, onset=onset)

    def _span(self) -> float:
        """The time the recent level's buckets span: the window, or more for a run logging slowly."""
        rq = self._recent
        return max(self.rule.window, (rq[-1][0] - rq[0][0] + 1) * self._width) if rq else self.rule.window

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    def ready(self, now: float) -> bool:
        return len(self.base) >= self.rule.min_baseline_points and len(self._recent) >= self.rule.min_points

    def stats(self) -> dict[str, float | int | None]:
        if not len(self.base) or not len(self.recent):
            return {"baseline": None, "level": None}
        return {"baseline": self.base.median(), "level": self.recent.median()}
