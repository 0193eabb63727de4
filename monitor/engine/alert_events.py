"""What the evaluator hands out: an alert's key, an alert event (a state change), an open alert."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from alerts.lifecycle import AlertStatus, Transition
from alerts.model import Finding, Severity
from monitor.rules.spec import RuleSpec


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
    ref: int | None = None  # the storage id of the instance, once it has one


@dataclass
class OpenAlert:
    """A pending or firing alert instance."""

    key: AlertKey
    status: AlertStatus
    ref: int | None = None
    cold: bool = False  # restored without its detector's state: resolves only once the detector is ready
