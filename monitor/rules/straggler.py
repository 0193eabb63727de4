"""``straggler``: one member of the run's fleet (a GPU, or a host) moved away from the rest of the fleet
and stays there: the slow GPU that drags a hero run down a few percent for weeks.

The fleet is the baseline. The engine reads the rule's fleet metric (``metric``, e.g. ``sm_active``,
from the Prometheus target's ``fleet``) and, at every timestamp, feeds this rule the oddest member's
drift (``monitor.fleet.straggler``): its distance from the fleet median over the last ``window``, in
robust sigmas, minus the distance it kept over the ``baseline`` before. A member that has always read
differently (rank 0, a pipeline stage, a GPU in a hot slot) drifts by about 0 and never fires; the
whole fleet moving together is not a straggler either. The sample's metric is ``fleet/<rule name>``;
its labels name the member, its value and the fleet median.

The condition holds while the drift is at least ``z``; ``for`` makes it sustained. A run without fleet
data never fires. After a restart the drift is rebuilt from the stored raster.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import Detector, fmt_value, register
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample


class StragglerSpec(RuleSpec):
    kind: Literal["straggler"] = "straggler"
    metric: str = Field(default="sm_active", description="the fleet metric (a name under prometheus.fleet)")
    z: float = Field(default=6.0, gt=0, description="drift that counts, in robust sigmas of the fleet")
    window: Duration = Field(
        default=600.0, gt=0, description="recent span a member's distance is averaged on"
    )
    baseline: Duration = Field(
        default=3600.0, gt=0, description="the span before it, the member's own normal"
    )
    direction: Literal["below", "above", "either"] = Field(
        default="either", description="below: only members falling under the fleet count"
    )
    most: float = Field(
        default=0.05, gt=0, lt=1, description="more of the fleet drifting at once is no straggler"
    )
    stale_after: Duration = Field(
        default=900.0, description="no fleet data for this long: the condition lapses"
    )


def derived_metric(rule: RuleSpec) -> str:
    """The sample metric the engine feeds a straggler rule: ``fleet/<rule name>``."""
    return f"fleet/{rule.name}"


@register
class StragglerDetector(Detector[StragglerSpec]):
    kind = "straggler"
    plot = "none"
    spec_model = StragglerSpec

    __slots__ = ("name", "t", "score", "member", "value", "median", "label", "since")

    def __init__(self, rule: StragglerSpec, run: str) -> None:
        super().__init__(rule, run)
        self.name = derived_metric(rule)
        self.t: float | None = None
        self.score = 0.0
        self.member = ""
        self.value = ""
        self.median = ""
        self.label = rule.metric
        self.since: float | None = None  # when the score last reached z (the onset of a straggler)

    def inputs(self) -> frozenset[str]:
        return frozenset({self.name})

    def observe(self, sample: Sample) -> None:
        score = sample.metrics.get(self.name)
        if score is None or not math.isfinite(score):
            return
        labels = sample.labels or {}
        self.t, self.score = sample.t, float(score)
        if self.score < self.rule.z:
            self.since = None
        elif self.since is None:
            self.since = sample.t
        self.member = str(labels.get("member", ""))
        self.value, self.median = str(labels.get("value", "")), str(labels.get("median", ""))
        self.label = str(labels.get("label", self.rule.metric))
        self.hot = True

    def evaluate(self, now: float) -> Finding:
        r = self.rule
        if self.t is None:
            return Finding(False, reason=f"no fleet data for {r.metric} yet")
        if r.stale_after and now - self.t > r.stale_after:
            return Finding(
                False, value=self.score, reason=f"no fleet data for {format_duration(now - self.t)}"
            )
        if self.score >= r.z:
            what = (
                f"{self.member}: {self.label} {self.value} against a fleet median of {self.median}"
                if self.member
                else f"a member of the fleet on {self.label}"
            )
            reason = (
                f"{what}, {fmt_value(self.score)} robust sigmas away from where it kept over the "
                f"{format_duration(r.baseline)} before"
            )
            return Finding(True, value=self.score, threshold=r.z, reason=reason, onset=self.since)
        return Finding(
            False,
            value=self.score,
            threshold=r.z,
            reason=f"no member of the fleet drifted from it on {self.label}",
        )
