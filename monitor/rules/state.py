"""``state``: the run's reported state is one of ``states`` (by default crashed, failed or killed).

A finished run never pages: ``finished`` may only be watched by an ``info`` rule. A resumed run
(state back to running) clears the condition.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from alerts.model import Finding, Severity
from monitor.rules.base import STATE, Detector, register
from monitor.rules.spec import RuleSpec
from monitor.samples import RunState, Sample

StateName = Literal["running", "crashed", "finished", "failed", "killed", "preempted"]


class StateSpec(RuleSpec):
    kind: Literal["state"] = "state"
    states: list[StateName] = Field(default_factory=lambda: ["crashed", "failed", "killed"], min_length=1)

    @model_validator(mode="after")
    def _finished_never_pages(self) -> StateSpec:
        if RunState.FINISHED in self.states and self.severity is not Severity.INFO:
            raise ValueError("a finished run never pages: watch 'finished' only with severity info")
        return self


@register
class StateDetector(Detector[StateSpec]):
    kind = "state"
    about_the_end = True
    plot = "progress"
    spec_model = StateSpec

    __slots__ = ("_watch", "state", "since", "step")

    def __init__(self, rule: StateSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self._watch = frozenset(rule.states)
        self.state: RunState | None = None
        self.since: float | None = None
        self.step: int | None = None

    def inputs(self) -> frozenset[str] | None:
        return None

    def feeds(self) -> frozenset[str]:
        return frozenset({STATE})

    def observe(self, sample: Sample) -> None:
        if sample.step is not None:
            self.step = sample.step
        st = sample.state
        if st is None or st == self.state:
            return
        self.state, self.since = st, sample.t
        self.hot = st in self._watch

    def evaluate(self, now: float) -> Finding:
        if self.state is None:
            return Finding(False, reason="state not reported yet")
        at = f" at step {self.step}" if self.step is not None else ""
        onset = self.since if self.hot else None  # when the run entered the state
        return Finding(
            self.hot, step=self.step, reason=f"run is {self.state}{at}", onset=onset, onset_step=self.step
        )

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict
