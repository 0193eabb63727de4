"""The alert model: what a rule reports, how it is identified, and its states."""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field


class Severity(enum.StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """The one severity order: critical first (0), then warning, then info."""
        return _RANK[self.value]

    @staticmethod
    def rank_of(value: str | None) -> int:
        """``rank`` of a severity as stored (a string); after every known one for anything else."""
        return _RANK.get(value or "", len(_RANK))


_RANK = {"critical": 0, "warning": 1, "info": 2}


class AlertState(enum.StrEnum):
    INACTIVE = "inactive"
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"

    @property
    def active(self) -> bool:
        return self in (AlertState.PENDING, AlertState.FIRING)


def fingerprint(labels: Mapping[str, str]) -> str:
    """A stable identity for an alert: the hash of its sorted label set.

    The rule name (``alertname``) and the run (``run``) are labels like any other, so
    fingerprint = rule + run + labels.
    """
    canonical = json.dumps(sorted((str(k), str(v)) for k, v in labels.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Finding:
    """One evaluation result of a rule for one run: is the condition true now, and the evidence.

    ``unknown``: the rule cannot tell (its data source is unreadable, or it has not seen enough data
    since herowatch started): the alert keeps the state it had, neither firing nor resolving.

    ``onset``/``onset_step``: when the evidence began, the time (unix seconds) and step of the first
    sample at which the condition the rule judged began to hold (None: the rule cannot say). Time to
    detect is measured from it to the first notification."""

    active: bool
    value: float | None = None
    threshold: float | None = None
    step: int | None = None
    reason: str = ""
    extra_labels: Mapping[str, str] = field(default_factory=dict)
    unknown: bool = False
    onset: float | None = None
    onset_step: int | None = None
