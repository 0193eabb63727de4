"""What ``herowatch replay`` reports: one alert transition (``ReplayEvent``, as ``--format jsonl``
prints it) and a run's summary (``RunSummary``)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, KeysView
from dataclasses import dataclass, field
from typing import Any

from alerts.model import AlertState
from alerts.symptoms import SYMPTOM, joins
from monitor.engine.blindness import Blind
from monitor.engine.coverage import RunCoverage
from monitor.engine.evaluator import AlertEvent
from monitor.samples import Sample


@dataclass(frozen=True)
class ReplayEvent:
    """One alert transition, as ``herowatch replay --format jsonl`` prints it."""

    t: float
    run: str
    rule: str
    kind: str
    metric: str | None
    severity: str
    state: str  # pending, firing, resolved, or inactive (a pending alert whose condition ended)
    step: int | None
    value: float | None
    summary: str
    reason: str
    fingerprint: str
    symptom: str | None = None  # the symptom label: alerts of one run and symptom are one incident
    onset: float | None = None  # when the evidence began, as the rule reported it (time to detect from here)

    def to_json(self) -> dict[str, Any]:
        value = self.value
        if value is not None and not math.isfinite(value):
            value = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
        return {
            "t": self.t,
            "run": self.run,
            "rule": self.rule,
            "kind": self.kind,
            "metric": self.metric,
            "severity": self.severity,
            "state": self.state,
            "step": self.step,
            "value": value,
            "summary": self.summary,
            "reason": self.reason,
        }


@dataclass
class RunSummary:
    run: str
    samples: int = 0
    first_t: float | None = None
    last_t: float | None = None
    first_step: int | None = None
    last_step: int | None = None
    last_step_t: float | None = None  # when the last step came (the trace may go on without a new one)
    fired: Counter[str] = field(default_factory=Counter)  # severity -> alerts that fired
    rules_fired: Counter[str] = field(default_factory=Counter)  # rule -> times it fired
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    coverage: RunCoverage | None = None  # which rules could see, at the end
    blind: Blind | None = None  # its watching_blind text, if any rule could not

    def take(self, clock: RunClock) -> None:
        """What the run's clock counted of its samples, at the end of the trace."""
        self.samples, self.last_t = clock.samples, clock.t
        self.first_step, self.last_step = clock.first_step, clock.last_step
        self.last_step_t = clock.last_step_t

    @property
    def worst(self) -> str | None:
        for sev in ("critical", "warning", "info"):
            if self.fired.get(sev):
                return sev
        return None


def to_replay_event(ev: AlertEvent) -> ReplayEvent:
    rule, status = ev.key.rule, ev.status
    state = ev.transition.to_state
    word = "inactive" if state is AlertState.INACTIVE else state.value
    return ReplayEvent(
        t=ev.transition.at,
        run=ev.key.run,
        rule=rule.name,
        kind=rule.kind,
        metric=rule.metric,
        severity=rule.severity.value,
        state=word,
        step=ev.finding.step if ev.finding.step is not None else (status.step if status else None),
        value=ev.finding.value,
        summary=ev.annotations.get("summary", ""),
        reason=ev.finding.reason,
        fingerprint=ev.key.fingerprint,
        symptom=ev.key.labels.get(SYMPTOM),
        onset=status.onset if status else None,
    )


def pages(events: Iterable[ReplayEvent]) -> list[ReplayEvent]:
    """The firings that would notify someone, as delivery decides (one receiver grouping by run):
    warnings and criticals, but for an alert that joins an incident already paged and still firing
    (``alerts.symptoms``: same run and symptom, at least as severe), whose message is updated instead."""
    firing: dict[str, dict[str, str]] = {}  # fingerprint -> labels, of the announced alerts still firing
    out = []
    for e in events:
        labels = {"run": e.run, "severity": e.severity, **({SYMPTOM: e.symptom} if e.symptom else {})}
        if e.state == AlertState.RESOLVED:
            firing.pop(e.fingerprint, None)
        elif e.state == AlertState.FIRING and e.severity != "info":
            if not joins(labels, firing.values()):
                out.append(e)
            firing[e.fingerprint] = labels
    return out


class RunClock:
    """A run's simulated clock in a replay, and what its summary needs of its samples."""

    __slots__ = (
        "t",
        "pending",
        "samples",
        "first_step",
        "last_step",
        "last_step_t",
        "translate",
        "keys",
        "as_is",
    )

    def __init__(self, translate: Callable[[Sample], Sample] | None) -> None:
        self.t = -math.inf
        self.pending = False  # samples at ``t`` not evaluated yet
        self.samples = 0
        self.first_step: int | None = None
        self.last_step: int | None = None
        self.last_step_t: float | None = None  # the time of the sample with the last step
        self.translate = translate  # trainer key names -> the rules' names (None: samples as they are)
        self.keys: KeysView[str] | None = None  # the metric names of the run's last sample, as fed
        self.as_is = False  # its translation left it as it was


@dataclass
class ReplayResult:
    """What ``replay`` returns: every alert transition, in time order, and a summary per run."""

    events: list[ReplayEvent]
    summaries: dict[str, RunSummary]

    def firing(self, severity: str | None = None) -> list[ReplayEvent]:
        firing = [e for e in self.events if e.state == AlertState.FIRING]
        return [e for e in firing if severity is None or e.severity == severity]

    def pages(self) -> list[ReplayEvent]:
        """The firings that would notify someone, as delivery decides (``pages``)."""
        return pages(self.events)
