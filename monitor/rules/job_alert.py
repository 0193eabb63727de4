"""``job_alert``: a custom alert the job itself sent (``herowatch emit alert``, as W&B's ``wandb.alert``).

The job names the alert (``title``), tells what happened (``text``) and how bad it is (``level``: info,
warn, error). A rule takes the alerts of one level (the hero pack has one rule per level: error is
critical and pages, warn goes to the channel, info is recorded and never notifies). The alert's label
``title`` carries the job's title, so two titles are two alerts; its reason is "title: text".

A pushed alert fires at once and resolves on its own ``resolve_after`` after the job last sent that
title (a repeat keeps it firing), or at once when the job sends a resolve for that title. A repeat of
a title within the ``wait`` the job gave (W&B's ``wait_duration``, one minute by default) of the last
one taken is dropped, whatever its level, as W&B drops it. A run holds one alert per rule: when the
job sends a second title of the same level while the first still fires, the newer one is the alert
and the older one resolves.

The alert is the job's own word, not a condition of its metrics: it stands when the run is over (a
job that reports an error and exits still pages). Pushed alerts are events, not a stream: a run that
never sends one, or stops sending them, is not watched blind for it (the rule feeds no coverage).
Pure: the times are the samples' and ``now``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, model_validator

from alerts.model import Finding, Severity
from monitor.durations import Duration, format_duration
from monitor.rules.base import Detector, register
from monitor.rules.spec import RuleSpec
from monitor.samples import ALERT_METRIC, Sample

Level = Literal["info", "warn", "error"]
SEVERITY = {"error": Severity.CRITICAL, "warn": Severity.WARNING, "info": Severity.INFO}
MAX_TITLES = 256  # titles a run's detector remembers (the oldest are forgotten first)


class JobAlertSpec(RuleSpec):
    kind: Literal["job_alert"] = "job_alert"
    level: Level = Field(description="the level of the pushed alerts this rule takes: info, warn or error")
    resolve_after: Duration = Field(
        default=3600.0,
        gt=0,
        description="a pushed alert resolves this long after the job last sent its title",
    )

    @model_validator(mode="before")
    @classmethod
    def _severity_of_level(cls, data: Any) -> Any:
        """Without a severity of its own, the rule's is its level's: error critical, warn warning."""
        if isinstance(data, dict) and "severity" not in data and data.get("level") in SEVERITY:
            return {**data, "severity": SEVERITY[data["level"]]}
        return data

    @model_validator(mode="after")
    def _info_never_pages(self) -> JobAlertSpec:
        if self.level == "info" and self.severity is not Severity.INFO:
            raise ValueError("an info alert never pages: a rule on level info has severity info")
        return self


@register
class JobAlertDetector(Detector[JobAlertSpec]):
    kind = "job_alert"
    spec_model = JobAlertSpec
    plot = "none"
    # the job's own word, not a condition of its metrics: it stands when the run is over (a job that
    # reports an error and exits still pages), until its resolve_after or the job's resolve
    about_the_end = True

    __slots__ = ("taken", "firing")

    def __init__(self, rule: JobAlertSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        # title -> [when it was last taken, the wait the job gave]: repeats within the wait are dropped
        self.taken: dict[str, list[float]] = {}
        # title -> [when last sent, its text, the step then] of this rule's level, until resolved
        self.firing: dict[str, list[Any]] = {}

    def inputs(self) -> frozenset[str] | None:
        return frozenset({ALERT_METRIC})

    def feeds(self) -> frozenset[str]:
        return frozenset()  # events, not a stream: never arriving or stopping is no blindness

    def observe(self, sample: Sample) -> None:
        alert, t = sample.alert, sample.t
        if alert is None:
            return
        title = alert.title
        if alert.resolved:
            self.firing.pop(title, None)
            self.taken.pop(title, None)
        else:
            last = self.taken.get(title)
            if last is not None and t - last[0] < last[1]:
                return  # a repeat within the job's wait: dropped, as W&B drops it
            self.taken[title] = [t, alert.wait]
            self.firing.pop(title, None)  # (re-inserted below: the newest title is last)
            if alert.level == self.rule.level:
                self.firing[title] = [t, alert.text, sample.step]
        self._forget(t)
        self.hot = bool(self.firing)

    def _forget(self, t: float) -> None:
        """Drop what can no longer matter at ``t``: resolved titles, waits that are over; keep it bounded."""
        after = self.rule.resolve_after
        for title in [k for k, v in self.firing.items() if v[0] + after <= t]:
            del self.firing[title]
        for title in [k for k, v in self.taken.items() if v[0] + v[1] <= t]:
            del self.taken[title]
        for box in (self.firing, self.taken):
            while len(box) > MAX_TITLES:
                del box[next(iter(box))]

    def evaluate(self, now: float) -> Finding:
        after = self.rule.resolve_after
        live = [(k, v) for k, v in self.firing.items() if now < v[0] + after]
        if not live:
            return Finding(
                False, reason=f"no {self.rule.level} alert from the job in {format_duration(after)}"
            )
        title, (sent, text, step) = live[-1]
        reason = f"{title}: {text}" if text else title
        return Finding(
            True,
            value=None,
            step=step,
            reason=reason,
            extra_labels={"title": title},
            onset=sent,
            onset_step=step,
        )

    def holds_until(self) -> float:
        """The newest alert fires till its ``resolve_after`` is up (or a sample changes it)."""
        after = self.rule.resolve_after
        return min((v[0] + after for v in self.firing.values()), default=math.inf)
