"""Rules x runs -> alert transitions. Pure: samples and ``now`` in, events out; no I/O.

The engine cycle feeds it what the sources read and persists what it returns; ``herowatch replay``
and ``herowatch rules test`` drive the very same object with a simulated clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from alerts.lifecycle import AlertStatus, Transition, advance
from alerts.model import Finding, Severity, fingerprint
from monitor.rules.base import DETECTORS, Detector
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample


@dataclass(frozen=True)
class AlertKey:
    rule: RuleSpec
    run: str
    labels: Mapping[str, str]
    fingerprint: str

    @property
    def severity(self) -> Severity:
        return self.rule.severity


@dataclass(frozen=True)
class AlertEvent:
    """An alert changed state: what, for which run, why, and its status after the change."""

    key: AlertKey
    transition: Transition
    status: AlertStatus | None  # None: a pending alert went back to inactive
    finding: Finding
    annotations: Mapping[str, str]


@dataclass
class _RunRules:
    detectors: list[tuple[RuleSpec, Detector]] = field(default_factory=list)


class Evaluator:
    def __init__(
        self,
        rules_for_run: Callable[[str], Iterable[RuleSpec]],
        labels_for_run: Callable[[str], Mapping[str, str]] = lambda run: {},
    ) -> None:
        self._rules_for_run = rules_for_run
        self._labels_for_run = labels_for_run
        self._runs: dict[str, _RunRules] = {}
        self.active: dict[str, AlertStatus] = {}  # fingerprint -> pending or firing status

    def _run(self, run: str) -> _RunRules:
        rr = self._runs.get(run)
        if rr is None:
            rr = _RunRules([(spec, DETECTORS[spec.kind](spec, run)) for spec in self._rules_for_run(run)])
            self._runs[run] = rr
        return rr

    def runs(self) -> list[str]:
        return list(self._runs)

    def forget(self, run: str) -> None:
        self._runs.pop(run, None)

    def observe(self, sample: Sample) -> None:
        for _, det in self._run(sample.run).detectors:
            det.observe(sample)

    def key(self, rule: RuleSpec, run: str, finding: Finding | None = None) -> AlertKey:
        labels = {
            **self._labels_for_run(run),
            **rule.labels,
            "alertname": rule.name,
            "run": run,
            "severity": rule.severity.value,
        }
        if rule.metric:
            labels["metric"] = rule.metric
        if finding is not None:
            labels.update(finding.extra_labels)
        return AlertKey(rule, run, labels, fingerprint(labels))

    def evaluate(self, run: str, now: float) -> list[AlertEvent]:
        events = []
        for rule, det in self._run(run).detectors:
            finding = det.evaluate(now)
            key = self.key(rule, run, finding)
            status, transition = advance(
                self.active.get(key.fingerprint), finding, now, rule.for_, rule.keep_firing_for
            )
            if status is not None and status.state.active:
                self.active[key.fingerprint] = status
            else:
                self.active.pop(key.fingerprint, None)
            if transition is not None:
                events.append(
                    AlertEvent(key, transition, status, finding, self.annotations(rule, run, finding))
                )
        return events

    @staticmethod
    def annotations(rule: RuleSpec, run: str, finding: Finding) -> dict[str, str]:
        values = {
            "run": run,
            "value": finding.value,
            "threshold": finding.threshold,
            "step": finding.step,
            "reason": finding.reason,
        }
        out = {k: rule.render(k, **values) for k in rule.annotations}
        out.setdefault("summary", f"{run}: {rule.name}: {finding.reason}")
        return out
