"""Alert group episodes and their members: open, join, announce, close. SQL only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, exists, func, or_, select, update
from sqlalchemy.orm import Session

from alerts.model import AlertState
from monitor.storage.models import Alert, AlertGroup, GroupMember, Notification
from monitor.storage.statuses import BUSY, OutboxStatus
from monitor.storage.types import EpochTime

GROUPS, MEMBERS = AlertGroup.__table__, GroupMember.__table__  # executemany statements go to the tables


def open_group(s: Session, key: str) -> AlertGroup | None:
    return s.scalar(select(AlertGroup).where(AlertGroup.open_key == key))


def create_group(
    s: Session, key: str, receiver: str, labels: Mapping[str, str], timing: Mapping[str, Any], now: float
) -> AlertGroup:
    group = AlertGroup(
        group_key=key,
        open_key=key,
        receiver=receiver,
        created_at=now,
        labels=dict(labels),
        timing=dict(timing),
    )
    s.add(group)
    s.flush()
    return group


def close(s: Session, group: AlertGroup, now: float) -> None:
    group.open_key, group.closed_at = None, now


def members(s: Session, group_id: int) -> list[tuple[Alert, GroupMember]]:
    q = (
        select(Alert, GroupMember)
        .join(GroupMember, GroupMember.alert_id == Alert.id)
        .where(GroupMember.group_id == group_id)
        .order_by(Alert.id)
    )
    return [(a, m) for a, m in s.execute(q)]


def members_of(s: Session, group_ids: Sequence[int]) -> dict[int, list[tuple[Alert, GroupMember]]]:
    """``members`` of several groups in one query: group id -> its (alert, member) pairs, by alert id."""
    out: dict[int, list[tuple[Alert, GroupMember]]] = {g: [] for g in group_ids}
    if not group_ids:
        return out
    q = (
        select(Alert, GroupMember)
        .join(GroupMember, GroupMember.alert_id == Alert.id)
        .where(GroupMember.group_id.in_(list(group_ids)))
        .order_by(GroupMember.group_id, Alert.id)
    )
    for a, m in s.execute(q):
        out[m.group_id].append((a, m))
    return out


def alerts_of(s: Session, group_id: int) -> list[Alert]:
    return [a for a, _ in members(s, group_id)]


def join(s: Session, group_id: int, alert_id: int, now: float) -> None:
    if s.get(GroupMember, (group_id, alert_id)) is None:
        s.add(GroupMember(group_id=group_id, alert_id=alert_id, joined_at=now))
        s.flush()


def has_backlog(s: Session, group_id: int) -> bool:
    n = s.scalar(
        select(func.count())
        .select_from(Notification)
        .where(Notification.group_id == group_id, Notification.status.in_(BUSY))
    )
    return bool(n)


def with_backlog(s: Session, group_ids: Sequence[int]) -> set[int]:
    """Those of these groups that ``has_backlog`` (one query for all of them)."""
    if not group_ids:
        return set()
    q = select(Notification.group_id).where(
        Notification.group_id.in_(list(group_ids)), Notification.status.in_(BUSY)
    )
    return set(s.scalars(q.distinct()))


def settled(s: Session, group_id: int) -> bool:
    """Have all the group's alerts resolved, with nothing of it waiting to be sent? (One query.)"""
    unresolved = exists().where(
        GroupMember.group_id == group_id, GroupMember.alert_id == Alert.id, Alert.state != AlertState.RESOLVED
    )
    busy = exists().where(Notification.group_id == group_id, Notification.status.in_(BUSY))
    return not s.scalar(select(or_(unresolved, busy)))


def mark_told(s: Session, group_id: int, announced: list[int], resolved: list[int], now: float) -> None:
    """Record what a sent message told of which alerts."""
    if announced:
        s.execute(
            update(GroupMember)
            .where(
                GroupMember.group_id == group_id,
                GroupMember.alert_id.in_(announced),
                GroupMember.announced_at.is_(None),
            )
            .values(announced_at=now)
            .execution_options(synchronize_session=False)
        )
    if resolved:
        s.execute(
            update(GroupMember)
            .where(GroupMember.group_id == group_id, GroupMember.alert_id.in_(resolved))
            .values(resolved_sent_at=now)
            .execution_options(synchronize_session=False)
        )


def mark_told_many(s: Session, items: Sequence[tuple[int, list[int], list[int], float]]) -> None:
    """``mark_told`` for several messages: (group id, announced, resolved, now) each; two executemany
    statements at most, one row of parameters per alert told of."""
    announced = [
        {"m_group": g, "m_alert": a, "m_now": now} for g, told, _, now in items for a in dict.fromkeys(told)
    ]
    resolved = [
        {"m_group": g, "m_alert": a, "m_now": now} for g, _, told, now in items for a in dict.fromkeys(told)
    ]
    same_member = (MEMBERS.c.group_id == bindparam("m_group")) & (MEMBERS.c.alert_id == bindparam("m_alert"))
    if announced:
        s.execute(
            update(MEMBERS)
            .where(same_member, MEMBERS.c.announced_at.is_(None))
            .values(announced_at=bindparam("m_now", type_=EpochTime())),
            announced,
        )
    if resolved:
        s.execute(
            update(MEMBERS).where(same_member).values(resolved_sent_at=bindparam("m_now", type_=EpochTime())),
            resolved,
        )


def record_messages(s: Session, items: Sequence[tuple[int, float, str | None]]) -> None:
    """``record_message`` for several groups: (group id, now, ref) each; an executemany per shape (with a
    new thread root, without)."""
    with_ref = [{"g_id": g, "g_now": now, "g_ref": ref} for g, now, ref in items if ref]
    without = [{"g_id": g, "g_now": now} for g, now, ref in items if not ref]
    stmt = update(GROUPS).where(GROUPS.c.id == bindparam("g_id"))
    sent_at = bindparam("g_now", type_=EpochTime())
    if with_ref:
        s.execute(stmt.values(last_sent_at=sent_at, root_ref=bindparam("g_ref")), with_ref)
    if without:
        s.execute(stmt.values(last_sent_at=sent_at), without)


def settled_among(s: Session, group_ids: Sequence[int]) -> set[int]:
    """Those of these groups that are open and ``settled`` (one query for all of them)."""
    if not group_ids:
        return set()
    unresolved = exists().where(
        GroupMember.group_id == AlertGroup.id,
        GroupMember.alert_id == Alert.id,
        Alert.state != AlertState.RESOLVED,
    )
    busy = exists().where(Notification.group_id == AlertGroup.id, Notification.status.in_(BUSY))
    q = select(AlertGroup.id).where(
        AlertGroup.id.in_(list(group_ids)), AlertGroup.open_key.is_not(None), ~unresolved, ~busy
    )
    return set(s.scalars(q))


def close_many(s: Session, items: Sequence[tuple[int, float]]) -> None:
    """``close`` for several groups: (group id, now) each, one executemany."""
    if items:
        s.execute(
            update(GROUPS)
            .where(GROUPS.c.id == bindparam("g_id"))
            .values(open_key=None, closed_at=bindparam("g_now", type_=EpochTime())),
            [{"g_id": g, "g_now": now} for g, now in items],
        )


def record_message(s: Session, group_id: int, now: float, ref: str | None) -> None:
    """A message of the group went out: its timers count from now; ``ref`` is the receiver's thread root
    (a re-posted root replaces the old one)."""
    group = s.get(AlertGroup, group_id)
    if group is None:
        return
    group.last_sent_at = now
    if ref:
        group.root_ref = ref


def last_delivery(s: Session, group_id: int) -> float | None:
    """When the group's receiver last got any message of it (refreshes included)."""
    return s.scalar(
        select(func.max(Notification.sent_at)).where(
            Notification.group_id == group_id, Notification.status == OutboxStatus.SENT
        )
    )


def groups_with_alerts(s: Session, alert_ids: list[int]) -> list[AlertGroup]:
    """The open episodes that hold any of these alerts."""
    if not alert_ids:
        return []
    ids = select(GroupMember.group_id).where(GroupMember.alert_id.in_(alert_ids)).distinct()
    return list(s.scalars(select(AlertGroup).where(AlertGroup.id.in_(ids), AlertGroup.open_key.is_not(None))))


def sent_groups(s: Session) -> list[AlertGroup]:
    """Open episodes that have told their receiver something (candidates for reminders)."""
    return list(
        s.scalars(
            select(AlertGroup).where(AlertGroup.open_key.is_not(None), AlertGroup.last_sent_at.is_not(None))
        )
    )


def by_root(s: Session, key: str, root_ref: str) -> AlertGroup | None:
    """The episode of group ``key`` whose first message is ``root_ref`` (a button on that message)."""
    return s.scalar(
        select(AlertGroup)
        .where(AlertGroup.group_key == key, AlertGroup.root_ref == root_ref)
        .order_by(AlertGroup.id.desc())
        .limit(1)
    )


def by_key(s: Session, key: str) -> AlertGroup | None:
    """The open episode with this key, else the latest closed one (a button on an old message)."""
    group = open_group(s, key)
    if group is not None:
        return group
    return s.scalar(
        select(AlertGroup).where(AlertGroup.group_key == key).order_by(AlertGroup.id.desc()).limit(1)
    )


def firing_in_open_groups(
    s: Session, receiver: str, run_id: str, other_than: int
) -> list[tuple[AlertGroup, Alert]]:
    """The open episodes of ``receiver`` that hold a firing alert of run ``run_id`` (other than alert
    ``other_than``), each with that alert: oldest episode first (where an incident of the run is told)."""
    q = (
        select(AlertGroup, Alert)
        .join(GroupMember, GroupMember.group_id == AlertGroup.id)
        .join(Alert, Alert.id == GroupMember.alert_id)
        .where(
            AlertGroup.receiver == receiver,
            AlertGroup.open_key.is_not(None),
            Alert.run_id == run_id,
            Alert.state == AlertState.FIRING,
            Alert.id != other_than,
        )
        .order_by(AlertGroup.created_at, AlertGroup.id)
    )
    return [(g, a) for g, a in s.execute(q)]
