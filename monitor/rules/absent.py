"""``absent``: a metric that used to arrive stopped arriving while the run goes on.

Fires when the metric was seen, nothing of it came for ``after``, the run is running (or its state
unknown) and other telemetry arrived since (``while: progress``: the step counter kept moving, so a
row logged again at the step the run stopped on (an evaluation's, a final flush) is no progress;
``while: data``: any sample with a metric or step). A run that went entirely silent is
``telemetry_gone``'s business and a run that stopped stepping is ``stall``'s, so one incident does not
raise three alerts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import RAN_OUT, Detector, Stop, last_step, register
from monitor.rules.spec import RuleSpec
from monitor.samples import RUNNING_OR_UNKNOWN, RunState, Sample


class AbsentSpec(RuleSpec):
    kind: Literal["absent"] = "absent"
    metric: str
    after: Duration = Field(default=1800.0, gt=0, description="missing for longer than this fires")
    while_: Literal["progress", "data"] = Field(default="progress", alias="while")


@register
class AbsentDetector(Detector[AbsentSpec]):
    kind = "absent"
    spec_model = AbsentSpec
    clocked = True
    silence = True

    __slots__ = ("metric", "_progress", "state", "seen_at", "other_at", "step")

    def __init__(self, rule: AbsentSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.wake_at = math.inf
        self.metric = rule.metric
        self._progress = rule.while_ == "progress"
        self.state: RunState | None = None
        self.seen_at: float | None = None  # the metric's last arrival
        self.other_at: float | None = None  # the last other telemetry (steps, or any data)
        self.step: int | None = None

    def inputs(self) -> frozenset[str] | None:
        return None

    def feeds(self) -> frozenset[str]:
        return frozenset({self.metric})

    def observe(self, sample: Sample) -> None:
        if sample.state is not None:
            self.state = sample.state
        metrics = sample.metrics
        if metrics and self.metric in metrics:
            self.seen_at = sample.t
        elif self._moved(sample) if self._progress else (sample.step is not None or metrics):
            self.other_at = sample.t
        if sample.step is not None:
            self.step = sample.step
        if self.seen_at is None or self.state not in RUNNING_OR_UNKNOWN:
            self.wake_at = math.inf
        else:
            self.wake_at = self.seen_at + self.rule.after

    def _moved(self, sample: Sample) -> bool:
        """Did the step counter move (forward, or back after a rewind)? A row at the step already
        seen (an evaluation at the step a hung run stopped on) is not a step arriving."""
        return sample.step is not None and self.step is not None and sample.step != self.step

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        # a segment's samples carry the same metrics and no state: with the metric, each sets seen_at
        # to its time and wake_at after it; none can be due, so the state is the last one's
        if i >= end or self.metric not in samples[i].metrics or self.rule.after <= 0:
            return super().observe_many(samples, i, end)
        t = samples[end - 1].t
        self.seen_at = t
        step = last_step(samples, i, end)
        if step is not None:
            self.step = step
        self.wake_at = t + self.rule.after if self.state in RUNNING_OR_UNKNOWN else math.inf
        return end, RAN_OUT

    def evaluate(self, now: float) -> Finding:
        m = self.metric
        if self.seen_at is None:
            return Finding(False, reason=f"{m} never arrived")
        missing = now - self.seen_at
        if self.state not in RUNNING_OR_UNKNOWN:
            return Finding(False, value=missing, reason=f"run is {self.state}")
        going_on = self.other_at is not None and self.other_at > self.seen_at
        if not going_on:
            self.wake_at = math.inf  # only a sample (other data arriving) can make it fire
        active = missing > self.rule.after and going_on
        what = "steps" if self._progress else "other data"
        reason = f"no {m} for {format_duration(missing)}"
        reason += f" while {what} kept arriving" if going_on else f" (no {what} either)"
        return Finding(
            active,
            value=missing,
            threshold=self.rule.after,
            step=self.step,
            reason=reason,
            onset=self.seen_at if active else None,  # the evidence: no metric since its last arrival
        )

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict
