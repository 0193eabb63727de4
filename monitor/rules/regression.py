"""``regression``: the newest eval value is worse than the previous one by more than ``delta``.

Worse means higher (``higher_is_worse: true``, a loss) or lower (an accuracy). ``relative: true``
reads ``delta`` as a fraction of the previous value. The same value logged again at the same step
is not a new eval. The condition holds until the next eval.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.rules.base import Detector, fmt_value, register
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample

INF = math.inf


class RegressionSpec(RuleSpec):
    kind: Literal["regression"] = "regression"
    metric: str
    delta: float = Field(default=0.0, ge=0, description="worse by more than this fires")
    relative: bool = Field(default=False, description="delta is a fraction of the previous value")
    higher_is_worse: bool = True


@register
class RegressionDetector(Detector[RegressionSpec]):
    kind = "regression"
    spec_model = RegressionSpec

    __slots__ = ("metric", "prev", "newest", "newest_at")

    def __init__(self, rule: RegressionSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.metric = rule.metric
        self.prev: tuple[float, int | None] | None = None
        self.newest: tuple[float, int | None] | None = None
        self.newest_at: float | None = None  # when the newest eval was logged (the onset of a regression)

    def observe(self, sample: Sample) -> None:
        v = sample.metrics.get(self.metric)
        if v is None or v - v:  # missing, NaN or Inf
            return
        step = sample.step
        if self.newest is not None and self.newest == (v, step):
            return  # the same eval logged twice
        if self.newest is not None and step is not None and self.newest[1] == step:
            self.newest = (v, step)  # a corrected value for the same eval
        else:
            self.prev, self.newest = self.newest, (v, step)
            self.newest_at = sample.t
        self.hot = self._worse() is not None

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    def _worse(self) -> float | None:
        if self.prev is None or self.newest is None:
            return None
        r = self.rule
        (old, _), (new, _) = self.prev, self.newest
        change = (new - old) if r.higher_is_worse else (old - new)
        limit = r.delta * abs(old) if r.relative else r.delta
        return change if change > limit else None

    def evaluate(self, now: float) -> Finding:
        m = self.metric
        if self.newest is None:
            return Finding(False, reason=f"no {m} yet")
        new, step = self.newest
        if self.prev is None:
            return Finding(
                False, value=new, step=step, reason=f"first {m} {fmt_value(new)}: nothing to compare"
            )
        old, old_step = self.prev
        r = self.rule
        limit = r.delta * abs(old) if r.relative else r.delta
        threshold = old + limit if r.higher_is_worse else old - limit
        worse = self._worse()
        at = f" at step {step}" if step is not None else ""
        before = f" at step {old_step}" if old_step is not None else ""
        if worse is None:
            reason = f"{m} {fmt_value(new)}{at} is not worse than {fmt_value(old)}{before}"
        else:
            reason = f"{m} regressed to {fmt_value(new)}{at} from {fmt_value(old)}{before}"
        onset = self.newest_at if worse is not None else None  # the eval that came out worse
        return Finding(
            worse is not None,
            value=new,
            threshold=threshold,
            step=step,
            reason=reason,
            onset=onset,
            onset_step=step if onset is not None else None,
        )
