"""Delivery's enqueue stage (0: before the outbox), at the state change and in the engine's transaction:
route, group, enqueue.

An alert that fires is routed (``alerts.routing.routes_for``: info goes only where a route asks for
it), joins the open episode of its group for each receiver (a finished episode, all of whose alerts
have resolved and been told, is closed first, so the next page opens a new thread) or, when another
rule already fires for the same incident (``alerts.symptoms``), the episode that holds that one,
whatever the route's group_by (one incident, one page), and an outbox
row is written under an idempotency key. A resolution is enqueued for the episodes that hold the
alert; whether it is worth telling is decided at delivery (``compose``). The outbox row exists if and
only if the state change was committed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session

from alerts.grouping import GroupTiming, group_key, group_labels, next_send_at
from alerts.model import AlertState
from alerts.notifiers.registry import records_only
from alerts.routing import Route, routes_for
from alerts.symptoms import incident, same_incident
from monitor.storage import groups_repo, outbox_store
from monitor.storage.models import Alert, AlertGroup, Notification


@dataclass
class Enqueuer:
    route: Route
    receiver_kinds: Mapping[str, str]  # receiver name -> kind (one without a notifier: recorded, never sent)

    def on_transition(self, s: Session, alert: Alert, to_state: AlertState, now: float) -> list[Notification]:
        out = []
        for route in routes_for(self.route, alert.labels):
            if records_only(self.receiver_kinds.get(route.receiver)):
                continue
            timing = route.timing
            key = group_key(route.receiver, alert.labels, route.group_by)
            if to_state == AlertState.FIRING:
                group = _incident_episode(s, route.receiver, alert) or self._episode(
                    s, key, route, alert.labels, now
                )
                groups_repo.join(s, group.id, alert.id, now)
            else:
                group = _holding(s, route.receiver, alert, key) or groups_repo.open_group(s, key)
                if group is None or not timing.send_resolved:
                    continue  # never told (no episode), or resolutions are not wanted here
            n = outbox_store.enqueue_once(
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

    def _episode(
        self, s: Session, key: str, route: Route, labels: Mapping[str, str], now: float
    ) -> AlertGroup:
        """The open episode of the group, or a new one (closing one that has nothing left to tell)."""
        group = groups_repo.open_group(s, key)
        if group is not None and finished(s, group):
            groups_repo.close(s, group, now)
            s.flush()
            group = None
        if group is None:
            t: GroupTiming = route.timing
            group = groups_repo.create_group(
                s,
                key,
                route.receiver,
                group_labels(labels, route.group_by),
                {
                    "group_wait": t.group_wait,
                    "group_interval": t.group_interval,
                    "repeat_interval": t.repeat_interval,
                    "send_resolved": t.send_resolved,
                },
                now,
            )
        return group


def _incident_episode(s: Session, receiver: str, alert: Alert) -> AlertGroup | None:
    """The open episode of ``receiver`` that already holds a firing alert of the same incident (same run
    and symptom, ``alerts.symptoms``), whatever the route's group_by: a second rule that sees the same
    incident joins that thread and message rather than opening a page of its own."""
    if incident(alert.labels or {}) is None:
        return None
    for group, other in groups_repo.firing_in_open_groups(s, receiver, alert.run_id, alert.id):
        if same_incident(alert.labels or {}, other.labels or {}):
            return group
    return None


def _holding(s: Session, receiver: str, alert: Alert, key: str) -> AlertGroup | None:
    """The open episode of ``receiver`` that holds ``alert`` (its own group's first): where its
    resolution is told, also when it joined another group's incident."""
    held = [g for g in groups_repo.groups_with_alerts(s, [alert.id]) if g.receiver == receiver]
    return min(held, key=lambda g: g.open_key != key, default=None)


def finished(s: Session, group: AlertGroup) -> bool:
    """An episode is over when all of its alerts have resolved and nothing of it waits to be sent."""
    return groups_repo.settled(s, group.id)
