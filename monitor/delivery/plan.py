"""What a group's message tells, decided from its members and due rows alone (no I/O): the planning
step of ``compose``, table-tested in ``tests/test_delivery_plan.py``.

What is worth telling is decided from what each member alert is and what its receiver was already
told (after Alertmanager's notification log), not from which rows are due: rows only say "look now".
So a message that failed and is retried, or rows merged into it, can never lose an alert:

- a firing alert that is not muted and was not announced yet: news (it makes the message notify:
  ``open`` for the episode's first message, ``notify`` for a later one), unless it joins an incident
  the group already paged (``alerts.symptoms``: same run and symptom): then the message is updated to
  show both views and notifies nobody;
- a resolution: only of an alert that was announced, and only once (never "RESOLVED" for something
  nobody was told);
- an acknowledgement of an announced alert: an ``update`` (the root shows who took it);
- a reminder: the announced alerts that still fire, are not acknowledged and not muted;
- a refresh (for a receiver that forgets what it is not re-told, e.g. Alertmanager): the announced
  alerts that still fire and are not muted, acknowledged or not. It changes nothing and notifies nobody.

Nothing worth telling: a ``DropReason`` says why (the rows are recorded as dropped with it).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from alerts.model import AlertState
from alerts.symptoms import joins
from alerts.views import Kind
from monitor.storage.models import Alert, AlertGroup, GroupMember, Notification
from monitor.storage.statuses import NotificationKind

TOLD_STATES = (AlertState.FIRING, AlertState.RESOLVED)  # what a message shows (pending: not yet)


class DropReason(enum.StrEnum):
    """Why a group's due rows told nothing (the most telling reason among its alerts, in this order)."""

    MUTED = "muted"  # it would be news, but a silence or an inhibition mutes it
    ACKNOWLEDGED = "acknowledged"  # a reminder of alerts someone has taken
    RESOLUTIONS_OFF = "resolutions not sent"  # the route does not send resolutions (send_resolved)
    NEVER_ANNOUNCED = "never announced"  # it resolved (or is reminded of) before anyone was told it fired
    ALREADY_TOLD = "already told"  # the receiver knows this state already
    NOTHING_FIRING = "nothing firing"  # a reminder or refresh when nothing announced fires any more
    NO_ALERTS = "no alerts"  # the group has no members

    @property
    def text(self) -> str:
        """As recorded on the outbox row (``last_error``) and logged."""
        return f"nothing to tell: {self.value}"


@dataclass(frozen=True)
class Plan:
    """What a group's message tells."""

    kind: Kind
    told: list[tuple[Alert, GroupMember]]  # what is news
    new: list[Alert]  # firing alerts never announced
    shown: list[Alert]  # what the message shows: the announced and the told, firing or resolved


class _Mode(enum.Enum):
    CHANGE = "change"  # something changed: news is what the receiver does not know yet
    REPEAT = "repeat"  # a reminder alone (with news it is news)
    REFRESH = "refresh"  # the same alerts told again


def plan(
    group: AlertGroup,
    rows: Sequence[Notification],
    members: Sequence[tuple[Alert, GroupMember]],
    muted: Mapping[int, str],
) -> Plan | DropReason:
    """The message the group's due ``rows`` make, or why there is none. ``muted``: alert id -> why
    it is muted now (the ``mute`` stage), for the members that are."""
    mode = _mode(rows)
    acked = {r.alert_id for r in rows if r.kind == NotificationKind.ACK and r.alert_id is not None}
    send_resolved = bool((group.timing or {}).get("send_resolved", True))
    told: list[tuple[Alert, GroupMember]] = []
    why_not: set[DropReason] = set()
    for alert, member in members:
        verdict = _verdict(alert, member, mode, alert.id in acked, send_resolved)
        if verdict is None and alert.id in muted:
            verdict = DropReason.MUTED
        if verdict is None:
            told.append((alert, member))
        else:
            why_not.add(verdict)
    if not told:
        return min(why_not, key=list(DropReason).index, default=DropReason.NO_ALERTS)
    new = [a for a, m in told if a.state == AlertState.FIRING and m.announced_at is None]
    # an alert of an incident already paged (same run and symptom, announced and still firing) joins
    # its message: the message shows both views, nobody is paged twice (alerts.symptoms)
    paged = [
        a.labels or {} for a, m in members if a.state == AlertState.FIRING and m.announced_at is not None
    ]
    anew = [a for a in new if not joins(a.labels or {}, paged)]
    kind: Kind
    if mode is _Mode.REPEAT:
        kind = "repeat"
    elif mode is _Mode.REFRESH:
        kind = "refresh"
    elif group.root_ref is None and not any(m.announced_at for _, m in members):
        kind = "open"
    elif anew:
        kind = "notify"
    else:
        kind = "update"
    told_ids = {a.id for a, _ in told}
    shown = [
        a for a, m in members if a.state in TOLD_STATES and (m.announced_at is not None or a.id in told_ids)
    ]
    return Plan(kind, told, new, shown)


def _mode(rows: Sequence[Notification]) -> _Mode:
    if all(r.kind == NotificationKind.REPEAT for r in rows):
        return _Mode.REPEAT
    if all(r.kind in (NotificationKind.REFRESH, NotificationKind.REPEAT) for r in rows):
        return _Mode.REFRESH
    return _Mode.CHANGE


def _verdict(
    alert: Alert, member: GroupMember, mode: _Mode, ack_due: bool, send_resolved: bool
) -> DropReason | None:
    """None if the alert is news for this message (muting aside), else why it is not."""
    announced = member.announced_at is not None
    firing = alert.state == AlertState.FIRING
    if mode is not _Mode.CHANGE:  # a reminder or a refresh: of what was told and still fires
        if not firing:
            return DropReason.NOTHING_FIRING
        if not announced:
            return DropReason.NEVER_ANNOUNCED
        if mode is _Mode.REPEAT and alert.acked_at:
            return DropReason.ACKNOWLEDGED
        return None
    if firing:  # news until a sent message told of it (or told of its acknowledgement)
        return None if not announced or ack_due else DropReason.ALREADY_TOLD
    if alert.state != AlertState.RESOLVED:
        return DropReason.NOTHING_FIRING
    if not announced:  # a resolution is news only for what was announced, once
        return DropReason.NEVER_ANNOUNCED
    if member.resolved_sent_at is not None:
        return DropReason.ALREADY_TOLD
    return None if send_resolved else DropReason.RESOLUTIONS_OFF
