"""``telemetry_gone``: the run is reported running, yet no telemetry at all arrived for a while.

Telemetry is any sample with a step or a metric; state-only samples (the run list saying "running")
do not count. A run whose state was never reported counts as running. While the source cannot be
read, nothing is known about the run: the rule holds off (a source outage is not the run's fault).

A run that reports steps is the stall rule's (``progress_stalled``): it learns the run's own pauses
(saves, evaluations, restores) and says at which step it stopped, where a fixed silence limit pages a
long healthy save or a restore, then pages the same hang a second time. So by default this rule
watches runs without a step clock (``while_stepping: true`` watches every run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import ANY, RAN_OUT, Detector, Stop, last_step, register
from monitor.rules.spec import RuleSpec
from monitor.samples import RUNNING_OR_UNKNOWN, RunState, Sample


class TelemetryGoneSpec(RuleSpec):
    kind: Literal["telemetry_gone"] = "telemetry_gone"
    after: Duration = Field(default=600.0, gt=0, description="silence longer than this fires")
    while_stepping: bool = Field(
        default=False, description="also watch runs that report steps (by default the stall rule's)"
    )


@register
class TelemetryGoneDetector(Detector[TelemetryGoneSpec]):
    kind = "telemetry_gone"
    plot = "progress"
    spec_model = TelemetryGoneSpec
    clocked = True
    silence = True

    __slots__ = ("state", "blind", "first_seen", "last_data", "last_step")

    def __init__(self, rule: TelemetryGoneSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.wake_at = math.inf
        self.state: RunState | None = None
        self.blind = False
        self.first_seen: float | None = None
        self.last_data: float | None = None
        self.last_step: int | None = None

    def inputs(self) -> frozenset[str] | None:
        return None

    def feeds(self) -> frozenset[str]:
        return frozenset({ANY})

    def observe(self, sample: Sample) -> None:
        if self.first_seen is None:
            self.first_seen = sample.t
        if sample.source_error is not None:
            self.blind = True
            self.wake_at = math.inf
            return
        self.blind = False
        if sample.state is not None:
            if sample.state == RunState.RUNNING and self.state not in RUNNING_OR_UNKNOWN:
                self.last_data = None  # resumed: the silence is counted from now
                self.first_seen = sample.t
            self.state = sample.state
        if sample.step is not None or sample.metrics:
            self.last_data = sample.t
            if sample.step is not None:
                self.last_step = sample.step
        if self.state not in RUNNING_OR_UNKNOWN or self._stepping():
            self.wake_at = math.inf
        else:
            since = self.last_data if self.last_data is not None else self.first_seen
            self.wake_at = since + self.rule.after

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        # a segment's samples carry metrics and no state: each sets last_data to its time and
        # wake_at after it; none can be due, so the state is the last one's
        after = self.rule.after
        if i >= end or self.first_seen is None or self.state not in RUNNING_OR_UNKNOWN or after <= 0:
            return super().observe_many(samples, i, end)
        if not samples[i].metrics:
            return super().observe_many(samples, i, end)
        t = samples[end - 1].t
        self.blind = False
        self.last_data = t
        step = last_step(samples, i, end)
        if step is not None:
            self.last_step = step
        self.wake_at = math.inf if self._stepping() else t + after
        return end, RAN_OUT

    def _stepping(self) -> bool:
        """A run with a step clock, left to the stall rule."""
        return self.last_step is not None and not self.rule.while_stepping

    def evaluate(self, now: float) -> Finding:
        if self.state not in RUNNING_OR_UNKNOWN:
            return Finding(False, reason=f"run is {self.state}")
        if self.blind:
            return Finding(False, reason="source unreadable: telemetry unknown")
        if self.first_seen is None:
            return Finding(False, reason="no data yet")
        if self._stepping():
            return Finding(False, reason="the run reports steps: its progress is the stall rule's")
        since = self.last_data if self.last_data is not None else self.first_seen
        silent = now - since
        what = "no telemetry" if self.last_data is not None else "no telemetry since the run was seen"
        late = silent > self.rule.after
        if late:
            reason = f"{what} for {format_duration(silent)} while the run is reported running"
        else:
            reason = f"telemetry arriving: the last {format_duration(silent)} ago"
            reason += f" (limit {format_duration(self.rule.after)})"
        return Finding(
            late,
            value=silent,
            threshold=self.rule.after,
            step=self.last_step,
            reason=reason,
            onset=since if late else None,  # the evidence: nothing since the last data
            onset_step=self.last_step if late and self.last_data is not None else None,
        )

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict
