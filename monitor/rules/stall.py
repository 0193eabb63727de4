"""``stall``: no new step for longer than the run's own cadence allows."""

from __future__ import annotations

from collections import deque
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import Detector, register
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample


class StallSpec(RuleSpec):
    kind: Literal["stall"] = "stall"
    floor: Duration = Field(default=900.0, description="never fire before this long without a step")
    k: float = Field(default=10.0, gt=0, description="limit = max(floor, k x recent p99 step interval)")
    startup: Duration = Field(default=2700.0, description="allowance from a (re)start to the first step")
    window: int = Field(default=256, ge=8, description="recent step intervals kept for the p99")


@register
class StallDetector(Detector[StallSpec]):
    kind = "stall"
    spec_model = StallSpec

    def __init__(self, rule: StallSpec, run: str) -> None:
        super().__init__(rule, run)
        self.last_step: int | None = None
        self.last_step_at: float | None = None
        self.started_at: float | None = None  # first sight of the run, or its last restart
        self.state: str | None = None
        self.intervals: deque[float] = deque(maxlen=rule.window)

    def observe(self, sample: Sample) -> None:
        if self.started_at is None:
            self.started_at = sample.t
        if sample.state is not None:
            if sample.state == "running" and self.state not in (None, "running"):
                self.started_at, self.last_step_at = sample.t, None  # resumed after a crash
                self.intervals.clear()
            self.state = sample.state
        if sample.step is None:
            return
        if self.last_step is not None and sample.step < self.last_step:
            # a rewind: the run resumed from a checkpoint. Its cadence starts afresh.
            self.last_step, self.last_step_at = sample.step, sample.t
            return
        if self.last_step is None or sample.step > self.last_step:
            if self.last_step_at is not None and sample.t > self.last_step_at:
                self.intervals.append(sample.t - self.last_step_at)
            self.last_step, self.last_step_at = sample.step, sample.t

    def limit(self) -> float:
        if len(self.intervals) < 8:
            return self.rule.floor
        ordered = sorted(self.intervals)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        return max(self.rule.floor, self.rule.k * p99)

    def evaluate(self, now: float) -> Finding:
        if self.state is not None and self.state != "running":
            return Finding(False, reason=f"run is {self.state}")
        if self.last_step_at is None:
            if self.started_at is None:
                return Finding(False, reason="no data yet")
            waited = now - self.started_at
            active = waited > self.rule.startup
            return Finding(
                active,
                value=waited,
                threshold=self.rule.startup,
                step=self.last_step,
                reason=f"no first step {format_duration(waited)} after start "
                f"(allowance {format_duration(self.rule.startup)})",
            )
        idle = now - self.last_step_at
        limit = self.limit()
        if idle > limit:
            return Finding(
                True,
                value=idle,
                threshold=limit,
                step=self.last_step,
                reason=f"no new step for {format_duration(idle)} (limit {format_duration(limit)})",
            )
        return Finding(
            False,
            value=idle,
            threshold=limit,
            step=self.last_step,
            reason=f"step {self.last_step} reached, progress resumed",
        )
