"""``counter_increase``: a counter rose by at least ``increase`` within ``window`` (e.g. OOM kills).

For a cumulative counter (``cumulative: true``, Prometheus style) the increase is the sum of the
positive differences between consecutive values; a drop is a counter reset and the new value counts
in full, as Prometheus' ``increase()`` does. The first value seen is the starting point, not an
increase (a run first watched with 3 old OOM kills raises nothing). With ``cumulative: false`` each
sample carries its own count (Levanter's ``optim/skipped_step`` is 1 on a skipped step) and the
increase is their sum. Increases leave the window as time passes, and with ``min_steps`` only once the step
counter has also moved that many steps past them: a per-step count (skipped steps) is judged over at
least that many steps, so "3 in 15 minutes" means as much at 100 s a step (9 steps) as at 1 s (900).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import RAN_OUT, Detector, Stop, fmt_value, register
from monitor.rules.columns import all_finite, columns
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import take_first
from monitor.samples import Sample

INF = math.inf


class CounterIncreaseSpec(RuleSpec):
    kind: Literal["counter_increase"] = "counter_increase"
    metric: str
    increase: float = Field(default=1.0, gt=0, description="fires when the increase reaches this")
    window: Duration = Field(default=3600.0, gt=0)
    cumulative: bool = Field(default=True, description="false: each sample is a count, summed")
    min_steps: int = Field(default=0, ge=0, description="the window spans at least this many steps")


@register
class CounterIncreaseDetector(Detector[CounterIncreaseSpec]):
    kind = "counter_increase"
    spec_model = CounterIncreaseSpec

    __slots__ = ("metric", "_cumulative", "prev", "events", "total", "resets", "last_step", "first_at")

    def __init__(self, rule: CounterIncreaseSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.metric = rule.metric
        self._cumulative = rule.cumulative
        self.prev: float | None = None
        self.events: list[tuple[float, float, int | None]] = []  # (t, increase, step), oldest first
        self.total = 0.0  # increase within the window
        self.resets = 0
        self.last_step: int | None = None
        self.first_at: float | None = None  # the first value this detector saw

    def ready(self, now: float) -> bool:
        """Started without its history, it can vouch for a quiet window only once it saw all of one."""
        return self.first_at is not None and now - self.first_at >= self.rule.window

    def observe(self, sample: Sample) -> None:
        v = sample.metrics.get(self.metric)
        if v is None or v - v:  # missing, NaN or Inf
            return
        if self.first_at is None:
            self.first_at = sample.t
        if sample.step is not None:
            self.last_step = sample.step
        if self._cumulative:
            prev, self.prev = self.prev, v
            if prev is None:
                return
            if v < prev:
                self.resets += 1
                delta = v
            else:
                delta = v - prev
        else:
            delta = v
        if delta > 0:
            self.events.append((sample.t, delta, sample.step))
            self.total += delta
        elif not self.events:
            return  # nothing in the window, nothing new: the common case
        self._expire(sample.t)
        self.hot = self.total >= self.rule.increase

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        """Replay's batched path: with nothing in the window, samples that bring no increase (the common
        case: a counter that stays put, a count of 0) in a loop; the others through ``observe``."""
        m, cumulative = self.metric, self._cumulative
        cols = columns(samples, i, end)
        while i < end:
            if not (self.hot or self.events or self.first_at is None):
                prev, last_step = self.prev, self.last_step
                b = cols.base
                vs = cols.values(m)[i - b : end - b]
                if (  # the common case, at once: every value finite, none an increase, the last step there
                    cols.step[end - 1 - b] is not None
                    and all_finite(vs)
                    and (vs.count(prev) == len(vs) if cumulative else max(vs) <= 0.0)
                ):
                    if cumulative:
                        self.prev = vs[-1]
                    self.last_step = cols.step[end - 1 - b]
                    return end, RAN_OUT
                for k in range(i, end):
                    s = samples[k]
                    v = s.metrics.get(m)
                    if v is not None and not v - v:
                        if v > 0.0 if not cumulative else prev is None or v != prev:
                            break  # (an increase, or a counter reset: through observe)
                        prev = v
                        if s.step is not None:
                            last_step = s.step
                else:
                    k = end
                i = k
                if cumulative:
                    self.prev = prev
                self.last_step = last_step
            if i < end:  # not the common case: one sample through observe
                i, stop = self._uncommon(samples, i, end)
                if stop is not None:
                    return stop
        return i, RAN_OUT

    def _expire(self, now: float) -> None:
        events, horizon = self.events, now - self.rule.window
        while events and events[0][0] <= horizon and self._steps_behind(events[0][2]):
            self.total -= take_first(events)[1]
        if not events:
            self.total = 0.0  # no drift from float sums

    def _steps_behind(self, step: int | None) -> bool:
        """Is an increase at this step ``min_steps`` behind the newest step (or are steps not counted)?"""
        n, last = self.rule.min_steps, self.last_step
        return not n or step is None or last is None or last - step >= n

    def holds_until(self) -> float:
        if not self.events:
            return math.inf
        t, _, step = self.events[0]
        return t + self.rule.window if self._steps_behind(step) else math.inf  # else a step must come

    def evaluate(self, now: float) -> Finding:
        self._expire(now)
        r = self.rule
        active = self.total >= r.increase
        self.hot = active
        reason = f"{r.metric} rose by {fmt_value(self.total)} in the last {format_duration(r.window)}"
        if not active:
            reason += f", fires at {fmt_value(r.increase)}"
        onset = self.events[0][0] if active and self.events else None  # the first rise it counted
        return Finding(
            active, value=self.total, threshold=r.increase, step=self.last_step, reason=reason, onset=onset
        )
