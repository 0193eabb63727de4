"""``non_finite``: the newest value of a metric is NaN or +-Inf. Fires at once: no ``for`` allowed.

A finite value afterwards clears the condition; ``keep_firing_for`` keeps the alert up meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import field_validator

from alerts.model import Finding
from monitor.rules.base import RAN_OUT, Detector, Stop, fmt_value, register
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

    def __init__(self, rule: NonFiniteSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.metric = rule.metric
        self.value: float | None = None
        self.step: int | None = None
        self.count = 0  # non-finite values seen

    def observe(self, sample: Sample) -> None:
        v = sample.metrics.get(self.metric)
        if v is None:
            return
        bad = bool(v - v)  # NaN - NaN and Inf - Inf are NaN (a non-number raises: the evaluator cleans it)
        self.value, self.step = v, sample.step
        self.hot = bad
        if bad:
            self.count += 1

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        if self.hot:
            return super().observe_many(samples, i, end)
        m = self.metric
        last = None
        while i < end:
            s = samples[i]
            i += 1
            v = s.metrics.get(m)
            if v is None:
                continue
            if v - v:
                self.observe(s)
                return self._stop(samples, i, end)
            last = s
        if last is not None:
            self.value, self.step = last.metrics[m], last.step
        return i, RAN_OUT

    def evaluate(self, now: float) -> Finding:
        v = self.value
        if not self.hot:
            return Finding(False, value=v, step=self.step, reason=f"{self.metric} is finite ({fmt_value(v)})")
        at = f" at step {self.step}" if self.step is not None else ""
        return Finding(True, value=v, step=self.step, reason=f"{self.metric} is {fmt_value(v)}{at}")

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    def stats(self) -> dict[str, int]:
        return {"non_finite": self.count}
