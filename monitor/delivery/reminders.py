"""Notifications nobody's state change causes, planned periodically by one replica at a time:
reminders for groups that keep firing (``repeat_interval``, not for acknowledged alerts), the
announcement of an alert whose silence ended while it still fires, refreshes for receivers that
forget what they are not re-told (``refresh``: receiver -> seconds, from ``Notifier.refresh_every``:
Alertmanager resolves an alert it has not heard of for a while), and the watchdog's heartbeat."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.orm import Session

from alerts.grouping import GroupTiming, repeat_due
from alerts.inhibition import InhibitRule
from alerts.model import AlertState, Severity
from alerts.silences import CompiledSilences
from alerts.views import AlertView
from monitor.delivery.mute import Mutes
from monitor.storage import groups_repo, outbox_store
from monitor.storage.models import AlertGroup
from monitor.storage.statuses import NotificationKind


def plan(
    s: Session,
    now: float,
    inhibit_rules: Sequence[InhibitRule],
    silences: CompiledSilences,
    refresh: Mapping[str, float] | None = None,
) -> int:
    """``silences``: the compiled silences the pipeline keeps (one compilation per silence in force)."""
    made = 0
    mutes = Mutes.load(s, now, inhibit_rules, silences)
    groups = groups_repo.sent_groups(s)
    # every group's members, and which groups have something waiting, read once for all of them
    members = groups_repo.members_of(s, [g.id for g in groups])
    busy = groups_repo.with_backlog(s, [g.id for g in groups])
    for group in groups:
        live = [
            (a, m)
            for a, m in members[group.id]
            if a.state == AlertState.FIRING and mutes.reason(a.labels) is None
        ]
        # Before the backlog check: a change waiting for group_interval must not let the receiver forget
        # (a refresh made now is the group's backlog).
        if _refresh(s, group, live, (refresh or {}).get(group.receiver), now):
            made += 1
            continue
        if group.id in busy:
            continue
        for alert, member in live:
            if member.announced_at is None:  # muted when it fired; its silence is over now
                made += _row(
                    s, f"announce:{alert.id}:{group.id}", now, group, alert.id, NotificationKind.CHANGE
                )
        timing = GroupTiming(**group.timing)
        reminded = [a for a, m in live if m.announced_at is not None and not a.acked_at]
        if repeat_due(now, group.last_sent_at, timing, bool(reminded), acked=False):
            made += _row(
                s, f"repeat:{group.id}:{group.last_sent_at:.3f}", now, group, None, NotificationKind.REPEAT
            )
    return made


def _refresh(s: Session, group: AlertGroup, live: list, every: float | None, now: float) -> int:
    """A refresh when the receiver last heard of the group ``every`` seconds ago and something it was
    told still fires (unmuted). One at a time: its key names the last delivery it follows."""
    if not every or not any(m.announced_at is not None for _, m in live):
        return 0
    last = groups_repo.last_delivery(s, group.id) or group.last_sent_at
    if now - last < every:
        return 0
    return _row(s, f"refresh:{group.id}:{last:.3f}", now, group, None, NotificationKind.REFRESH)


def _row(
    s: Session, key: str, now: float, group: object, alert_id: int | None, kind: NotificationKind
) -> int:
    n = outbox_store.enqueue_once(
        s,
        key,
        now,
        receiver=group.receiver,
        group_id=group.id,
        alert_id=alert_id,
        kind=kind,
        payload={"status": AlertState.FIRING},
    )
    return int(n is not None)


def heartbeat(s: Session, receiver: str, interval: float, now: float) -> None:
    """The dead man's switch: one heartbeat per interval (a second replica's is the same row)."""
    alert = AlertView(
        id="watchdog",
        alertname="Watchdog",
        severity=Severity.INFO,
        state=AlertState.FIRING,
        labels={"alertname": "Watchdog"},
        summary="herowatch is alive (dead man's switch)",
        started_at=now,
        holds_for=2 * interval,  # a receiver that times alerts out (Alertmanager) keeps it firing till then
    )
    outbox_store.enqueue_once(
        s,
        f"heartbeat:{receiver}:{int(now // interval)}",
        now,
        receiver=receiver,
        kind=NotificationKind.HEARTBEAT,
        payload={"alert": alert.to_dict()},
    )
