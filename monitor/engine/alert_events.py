"""What the evaluator hands out: an alert's key, an alert event (a state change), an open alert."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from alerts.lifecycle import AlertStatus, Transition
from alerts.model import Finding, Severity
from monitor.durations import format_duration
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
    said: Finding | None = None  # its last true finding: its text, while ``keep_firing_for`` holds it


def held(said: Finding, now_finding: Finding, since: float, hold: float) -> Finding:
    """The finding a firing alert's text is rendered from while ``keep_firing_for`` (``hold``) keeps it
    firing after its condition ended: what it last said, with that text's age and what the rule says
    since, so that an updated message tells nothing stale as if it were now (and its resolution's
    "was:" still reads true)."""
    since_said = f"; since then: {now_finding.reason}" if now_finding.reason else ""
    note = f"as of {format_duration(max(0.0, since))} ago{since_said}; held firing {format_duration(hold)}"
    return replace(said, reason=f"{said.reason} ({note} after it ends)")
