"""The notification pipeline between the engine and the outbox: routing, grouping, throttling, silences,
inhibition, acknowledgements, repeats and the watchdog heartbeat.

On a state change the engine calls ``Planner.on_transition`` inside its own transaction, so the outbox
row exists if and only if the change was committed. At delivery time ``compose`` turns a group's due
rows into one message that shows the group's current state; muted changes are recorded, not sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from alerts.grouping import GroupTiming, group_key, group_labels, headline, next_send_at, repeat_due
from alerts.inhibition import InhibitRule, inhibited
from alerts.notifiers.base import Notification as Message
from alerts.routing import Route, receivers_for
from alerts.silences import SilenceSpec, silenced_by
from monitor.storage import series as series_store
from monitor.storage.models import Alert, AlertGroup, Notification, Run, Silence


@dataclass
class Planner:
    route: Route
    receiver_kinds: Mapping[str, str]
    inhibit_rules: Sequence[InhibitRule] = ()
    external_url: str | None = None
    actions: Mapping[str, bool] = field(default_factory=dict)  # receiver -> show buttons

    # ---- at the state change, in the engine's transaction ----------------------------------------
    def on_transition(self, s: Session, alert: Alert, to_state: str, now: float) -> list[Notification]:
        out = []
        for route in receivers_for(self.route, alert.labels):
            if self.receiver_kinds.get(route.receiver) == "dashboard":
                continue
            timing: GroupTiming = route.timing
            if to_state == "resolved" and not timing.send_resolved:
                continue
            group = self._group(s, route, alert.labels, now)
            n = enqueue_once(
                s,
                f"alert:{alert.id}:{to_state}:{route.receiver}",
                now,
                receiver=route.receiver,
                alert_id=alert.id,
                group_id=group.id,
                payload={"status": to_state},
                next_attempt_at=next_send_at(now, group.created_at, group.last_sent_at, timing),
            )
            if n is not None:
                out.append(n)
        return out

    def _group(self, s: Session, route: Route, labels: Mapping[str, str], now: float) -> AlertGroup:
        key = group_key(route.receiver, labels, route.group_by)
        group = s.scalar(select(AlertGroup).where(AlertGroup.group_key == key))
        if group is None:
            t = route.timing
            group = AlertGroup(
                group_key=key,
                receiver=route.receiver,
                created_at=now,
                labels=group_labels(labels, route.group_by),
                timing={
                    "group_wait": t.group_wait,
                    "group_interval": t.group_interval,
                    "repeat_interval": t.repeat_interval,
                    "send_resolved": t.send_resolved,
                },
            )
            s.add(group)
            s.flush()
        return group

    # ---- periodically: reminders and the dead man's switch ---------------------------------------
    def plan_repeats(self, s: Session, now: float) -> int:
        made = 0
        for group in s.scalars(select(AlertGroup).where(AlertGroup.last_sent_at.is_not(None))):
            timing = GroupTiming(**group.timing)
            alerts = group_alerts(s, group.id)
            live = [a for a in alerts if a.state == "firing" and not a.acked_at]
            mutes = self.mutes(s, now)
            live = [a for a in live if not mutes(a)]
            if not repeat_due(now, group.last_sent_at, timing, bool(live), acked=False):
                continue
            waiting = s.scalar(
                select(func.count())
                .select_from(Notification)
                .where(Notification.group_id == group.id, Notification.status.in_(("pending", "sending")))
            )
            if waiting:
                continue
            key = f"repeat:{group.id}:{group.last_sent_at:.3f}"
            if (
                enqueue_once(s, key, now, receiver=group.receiver, group_id=group.id, kind="repeat")
                is not None
            ):
                made += 1
        return made

    def heartbeat(self, s: Session, receiver: str, interval: float, now: float) -> None:
        enqueue_once(
            s,
            f"heartbeat:{receiver}:{int(now // interval)}",
            now,
            receiver=receiver,
            kind="heartbeat",
            payload={
                "status": "firing",
                "alertname": "Watchdog",
                "severity": "info",
                "labels": {"alertname": "Watchdog"},
                "annotations": {"summary": "herowatch is alive (dead man's switch)"},
                "started_at": now,
            },
        )

    # ---- at delivery ------------------------------------------------------------------------------
    def mutes(self, s: Session, now: float):  # noqa: ANN201
        silences = [
            SilenceSpec.parse(x.id, x.matchers.get("matchers", []), x.starts_at, x.ends_at)
            for x in s.scalars(select(Silence).where(Silence.ends_at > now, Silence.starts_at <= now))
        ]
        firing = [a.labels for a in s.scalars(select(Alert).where(Alert.state == "firing"))]

        def muted(alert: Alert) -> str | None:
            hit = silenced_by(alert.labels, silences, now)
            if hit is not None:
                return f"silenced by silence {hit.id}"
            if self.inhibit_rules and inhibited(alert.labels, firing, self.inhibit_rules):
                return "inhibited"
            return None

        return muted

    def compose(
        self, s: Session, group: AlertGroup, rows: Sequence[Notification], now: float
    ) -> Message | None:
        """One message for a group's due rows, showing the group's current state. None: all muted."""
        carrier = rows[-1]
        alerts = group_alerts(s, group.id)
        mutes = self.mutes(s, now)
        changed_ids = {r.alert_id for r in rows if r.alert_id is not None}
        if carrier.kind == "repeat":
            changed = [a for a in alerts if a.state == "firing" and not a.acked_at and not mutes(a)]
        else:
            changed = [a for a in alerts if a.id in changed_ids and not mutes(a)]
        if not changed:
            return None
        shown = [_alert_dict(a, mutes(a)) for a in alerts if a.state in ("firing", "resolved")]
        lead = headline([_alert_dict(a, None) for a in changed]) or shown[0]
        kind = "open" if group.root_ref is None else ("repeat" if carrier.kind == "repeat" else "update")
        run = s.get(Run, lead["labels"].get("run", "")) if lead["labels"].get("run") else None
        links = {
            "wandb_url": run.url if run else None,
            "dashboard_url": f"{self.external_url.rstrip('/')}/runs/{run.id}"
            if run and self.external_url
            else None,
        }
        extra: dict[str, Any] = {
            "group_key": group.group_key,
            "group_labels": group.labels,
            "kind": kind,
            "root_ref": group.root_ref,
            "alerts": shown,
            "changed": [a.id for a in changed],
            "links": links,
            "actions": self.actions.get(group.receiver, False),
            "series": _series_for(s, lead),
        }
        status = "firing" if any(a["state"] == "firing" for a in shown) else "resolved"
        return Message(
            idempotency_key=carrier.idempotency_key,
            receiver=carrier.receiver,
            status=status,
            alertname=lead["alertname"],
            severity=lead["severity"],
            labels=lead["labels"],
            annotations={
                "summary": lead["summary"],
                "description": lead.get("description") or "",
                "runbook_url": lead.get("runbook_url") or "",
            },
            started_at=lead["started_at"],
            ended_at=lead["ended_at"],
            value=lead["value"],
            step=lead["step"],
            extra=extra,
        )


def enqueue_once(
    s: Session,
    key: str,
    now: float,
    *,
    receiver: str,
    kind: str = "change",
    payload: dict[str, Any] | None = None,
    next_attempt_at: float | None = None,
    **fields: Any,
) -> Notification | None:
    """Add an outbox row under its idempotency key, unless one with that key exists: the one place that
    makes outbox rows, so that every kind of notification is deduplicated the same way."""
    if s.scalar(select(Notification.id).where(Notification.idempotency_key == key)) is not None:
        return None
    n = Notification(
        idempotency_key=key,
        kind=kind,
        receiver=receiver,
        status="pending",
        payload=payload or {},
        attempts=0,
        created_at=now,
        next_attempt_at=now if next_attempt_at is None else next_attempt_at,
        **fields,
    )
    s.add(n)
    return n


def group_alerts(s: Session, group_id: int) -> list[Alert]:
    ids = (
        select(Notification.alert_id)
        .where(Notification.group_id == group_id, Notification.alert_id.is_not(None))
        .distinct()
    )
    return list(s.scalars(select(Alert).where(Alert.id.in_(ids)).order_by(Alert.id)))


def _alert_dict(a: Alert, muted: str | None) -> dict[str, Any]:
    ann = a.annotations or {}
    return {
        "id": a.id,
        "alertname": a.rule,
        "severity": a.severity,
        "state": a.state,
        "labels": dict(a.labels),
        "summary": ann.get("summary", a.rule),
        "description": ann.get("description"),
        "runbook_url": ann.get("runbook_url"),
        "value": a.value,
        "threshold": a.threshold,
        "step": a.step,
        "metric": a.metric,
        "started_at": a.fired_at or a.active_at,
        "ended_at": a.resolved_at,
        "acked_by": a.acked_by,
        "silenced": muted,
    }


def _series_for(s: Session, alert: Mapping[str, Any], points: int = 300) -> dict[str, Any]:
    run = alert["labels"].get("run")
    metric = alert.get("metric") or "train/loss"
    if not run:
        return {}
    axis, buckets = series_store.read_series(s, run, metric)
    if not buckets:
        return {}
    buckets = buckets[-points:]
    return {
        metric: {
            "axis": axis,
            "x": [b.x0 for b in buckets],
            "y": [b.max for b in buckets],
            "y_min": [b.min for b in buckets],
            "event_x": alert.get("step"),
            "threshold": alert.get("threshold"),
        }
    }
