"""Grouping and throttling: which group an alert joins, and when a group may be notified.

Alertmanager's timers: a new group waits ``group_wait`` to collect its first alerts; later changes
go out at most every ``group_interval``; a group that keeps firing is repeated every
``repeat_interval`` unless acknowledged. Pure: times are passed in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from alerts.model import AlertState, Severity


@dataclass(frozen=True)
class GroupTiming:
    group_wait: float = 30.0
    group_interval: float = 300.0
    repeat_interval: float = 4 * 3600.0
    send_resolved: bool = True


def group_labels(labels: Mapping[str, str], group_by: Sequence[str]) -> dict[str, str]:
    if "..." in group_by:  # Alertmanager's "group by every label": each alert its own group
        return dict(labels)
    return {k: labels.get(k, "") for k in group_by}


def group_key(receiver: str, labels: Mapping[str, str], group_by: Sequence[str]) -> str:
    canonical = json.dumps(sorted(group_labels(labels, group_by).items()), separators=(",", ":"))
    return f"{receiver}:{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"


def next_send_at(now: float, created_at: float, last_sent_at: float | None, timing: GroupTiming) -> float:
    """When a change to a group may be sent: after group_wait for a group never notified, else no sooner
    than group_interval after the last notification."""
    if last_sent_at is None:
        return max(now, created_at + timing.group_wait)
    return max(now, last_sent_at + timing.group_interval)


def repeat_due(
    now: float, last_sent_at: float | None, timing: GroupTiming, firing: bool, acked: bool
) -> bool:
    return firing and not acked and last_sent_at is not None and now - last_sent_at >= timing.repeat_interval


def headline(alerts: Sequence[Mapping]) -> Mapping | None:
    """The alert a group's message leads with: firing before resolved, then the most severe, then oldest."""
    if not alerts:
        return None
    return sorted(
        alerts,
        key=lambda a: (
            a.get("state") != AlertState.FIRING,
            Severity.rank_of(a.get("severity")),
            a.get("started_at") or 0,
        ),
    )[0]
