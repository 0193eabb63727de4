"""``non_finite``: a value of a metric is NaN or +-Inf. Fires at once: no ``for`` allowed.

A non-finite value holds the condition until an evaluation has seen it: a poll that reads several rows
at once (a NaN step, then finite ones, as a 2-second poll of a run logging every second does) must
not lose the NaN behind the newest value. A finite value observed after that evaluation clears the
condition, as does a finite value for the same step (a corrected row); ``keep_firing_for`` keeps the
alert up meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import field_validator

from alerts.model import Finding
from monitor.rules.base import RAN_OUT, Detector, Stop, fmt_value, register
from monitor.rules.columns import all_finite, columns
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample


class NonFiniteSpec(RuleSpec):
    kind: Literal["non_finite"] = "non_finite"
    metric: str

    @field_validator("for_")
    @classmethod
    def _no_for(cls, v: float) -> float:
        if v:
            raise ValueError("a non_finite rule fires at once: leave 'for' out (use keep_firing_for)")
        return v


@register
class NonFiniteDetector(Detector[NonFiniteSpec]):
    kind = "non_finite"
    spec_model = NonFiniteSpec

    __slots__ = ("metric", "value", "step", "count", "bad", "judged", "since")

    def __init__(self, rule: NonFiniteSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.metric = rule.metric
        self.value: float | None = None
        self.step: int | None = None
        self.count = 0  # non-finite values seen
        self.bad: list | None = None  # [value, step] of the latest non-finite value, until judged
        self.judged = False  # an evaluation has reported ``bad``: the next finite value clears it
        self.since: list | None = None  # [time, step] of the first non-finite value of this episode

    def observe(self, sample: Sample) -> None:
        v = sample.metrics.get(self.metric)
        if v is None:
            return
        bad = not math.isfinite(v)  # (a non-number raises: the evaluator cleans it)
        self.value, self.step = v, sample.step
        if bad:
            self.count += 1
            if self.bad is None:
                self.since = [sample.t, sample.step]
            self.bad, self.judged = [v, sample.step], False
        elif self.bad is not None and (self.judged or sample.step == self.bad[1]):
            self.bad = None  # judged, or the same step logged again, finite (a correction)
        self.hot = self.bad is not None

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        if self.hot:
            return super().observe_many(samples, i, end)
        m = self.metric
        cols = columns(samples, i, end)
        b = cols.base
        if i < end and all_finite(cols.values(m)[i - b : end - b]):  # the common case at once: all finite
            self.value, self.step = cols.values(m)[end - 1 - b], samples[end - 1].step
            return end, RAN_OUT
        last = None
        for k in range(i, end):
            s = samples[k]
            v = s.metrics.get(m)
            if v is None:
                continue
            if v - v:  # NaN or Inf (NaN after the subtraction; 0 for a finite value)
                self.observe(s)
                return self._stop(samples, k + 1, end)
            last = s
        if last is not None:
            self.value, self.step = last.metrics[m], last.step
        return end, RAN_OUT

    def evaluate(self, now: float) -> Finding:
        v = self.value
        if self.bad is None:
            return Finding(False, value=v, step=self.step, reason=f"{self.metric} is finite ({fmt_value(v)})")
        self.judged = True
        bad, step = self.bad
        at = f" at step {step}" if step is not None else ""
        onset, onset_step = self.since if self.since is not None else (None, None)
        if math.isfinite(v):
            reason = f"{self.metric} was {fmt_value(bad)}{at} (now {fmt_value(v)})"
            return Finding(True, value=bad, step=step, reason=reason, onset=onset, onset_step=onset_step)
        reason = f"{self.metric} is {fmt_value(v)}{at}"
        return Finding(True, value=v, step=step, reason=reason, onset=onset, onset_step=onset_step)

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    def stats(self) -> dict[str, int]:
        return {"non_finite": self.count}
