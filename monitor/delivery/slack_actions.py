"""What a click on a Slack button does: acknowledge a group's alerts, or silence its run for a while.

The HTTP endpoint (monitor/api) verifies the signature with ``alerts.slack_interactions`` and hands the
parsed Interaction here. The action is stored with who did it; an acknowledgement also queues an update
so the thread's root shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.slack_interactions import Interaction
from monitor.delivery.planner import enqueue_once, group_alerts
from monitor.durations import format_duration
from monitor.storage import silences_repo
from monitor.storage.models import AlertGroup


@dataclass(frozen=True)
class ActionResult:
    text: str  # shown to the clicker (an ephemeral reply)
    changed: int


def apply(s: Session, action: Interaction, now: float) -> ActionResult:
    group = s.scalar(select(AlertGroup).where(AlertGroup.group_key == action.group_key))
    if group is None:
        return ActionResult("This alert group is no longer known to herowatch.", 0)
    who = action.user_name or action.user_id
    if action.action == "ack":
        return _ack(s, group, action, who, now)
    return _silence(s, group, action, who, now)


def _ack(s: Session, group: AlertGroup, action: Interaction, who: str, now: float) -> ActionResult:
    wanted = {int(i) for i in action.alert_ids if str(i).isdigit()}
    alerts = [a for a in group_alerts(s, group.id) if a.state == "firing" and (not wanted or a.id in wanted)]
    for a in alerts:
        if a.acked_at is None:
            a.acked_by, a.acked_at = who, now
            enqueue_once(
                s,
                f"ack:{a.id}:{group.receiver}",
                now,
                receiver=group.receiver,
                alert_id=a.id,
                group_id=group.id,
                payload={"status": "firing"},
            )
    if not alerts:
        return ActionResult("Nothing to acknowledge: the alerts have resolved.", 0)
    return ActionResult(f"Acknowledged by {who}: no reminders until they resolve or fire again.", len(alerts))


def _silence(s: Session, group: AlertGroup, action: Interaction, who: str, now: float) -> ActionResult:
    labels = {k: v for k, v in (group.labels or {}).items() if v}
    if not labels:
        return ActionResult("This group has no labels to silence by; use `herowatch silence add`.", 0)
    matchers = [f'{k}="{v}"' for k, v in sorted(labels.items())]
    seconds = action.duration or 3600.0
    row = silences_repo.create(s, matchers, now, now + seconds, who, "from Slack", now)
    return ActionResult(
        f"Silenced {' '.join(matchers)} for {format_duration(seconds)} by {who} "
        f"(silence {row.id}; `herowatch silence expire {row.id}` ends it).",
        1,
    )
