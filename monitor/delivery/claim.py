"""Delivery's claim stage: the due outbox rows, claimed with a lease in the caller's transaction.

A row outside any group (the watchdog's heartbeat) is a message of its own. The rows of a group make
one message at a time: the groups are locked together (another replica's are left out), a group with
a message out under a live claim waits, and each group's due rows are taken through their newest row,
the message's carrier (the others are merged into it; a re-send after an expired claim goes out as it
was). The groups' members are read for all of them at once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy.orm import Session

from alerts.model import Severity
from alerts.outbox import ClaimedNotification
from alerts.views import AlertView, GroupView
from monitor.storage import groups_repo, outbox_store
from monitor.storage.models import Alert, AlertGroup, GroupMember, Notification
from monitor.storage.statuses import OutboxStatus

DUE_PER_MESSAGE = 4  # rows read per message wanted (a group's several rows make one message)


@dataclass(frozen=True)
class GroupBatch:
    """A group's claimed rows, going out as one message carried by the last of them."""

    group: AlertGroup
    rows: list[Notification]
    members: list[tuple[Alert, GroupMember]]

    @property
    def carrier(self) -> Notification:
        return self.rows[-1]


@dataclass
class Claim:
    """One claim: ``open`` reads the due rows and takes the singles; ``groups`` takes groups in turn."""

    s: Session
    now: float
    worker: str
    lease: float
    singles: list[ClaimedNotification]
    ready: list[int]  # groups that may be claimed, in the order their rows came due
    rows: dict[int, list[Notification]]
    locked: dict[int, AlertGroup]

    @classmethod
    def open(cls, s: Session, now: float, limit: int, worker: str, lease: float) -> Claim:
        groups: dict[int, list[Notification]] = defaultdict(list)
        singles: list[Notification] = []
        for row in outbox_store.due(s, now, limit * DUE_PER_MESSAGE):
            if row.group_id is None:
                singles.append(row)
            else:
                groups[row.group_id].append(row)
        taken = outbox_store.take_many(s, singles[:limit], worker, now, lease)
        claimed = [ClaimedNotification(r.id, r.attempts, single_view(r)) for r in singles if r.id in taken]
        locked = outbox_store.lock_groups(s, list(groups))  # another replica's are left out
        out = outbox_store.sending_groups(s, list(locked), now)  # a message of theirs is out
        ready = [gid for gid in groups if gid in locked and gid not in out]
        return cls(s, now, worker, lease, claimed, ready, groups, locked)

    def groups(self, room: int) -> list[GroupBatch]:
        """Up to ``room`` more groups, taken together (empty: none left); a group whose carrier another
        claim took meanwhile is left out."""
        while self.ready:
            chunk, self.ready = self.ready[:room], self.ready[room:]
            batches = []
            for gid in chunk:
                rows = self.rows[gid]
                expired = [r for r in rows if r.status == OutboxStatus.SENDING]
                batches.append(expired[:1] if expired else rows)  # a re-send goes out as it was
            taken = outbox_store.take_many(
                self.s, [b[-1] for b in batches], self.worker, self.now, self.lease
            )
            batches = [b for b in batches if b[-1].id in taken]
            for b in batches:
                outbox_store.merge(b, b[-1])
            if batches:
                members = groups_repo.members_of(self.s, [b[-1].group_id for b in batches])
                return [GroupBatch(self.locked[b[-1].group_id], b, members[b[-1].group_id]) for b in batches]
        return []


def single_view(row: Notification) -> GroupView:
    """A notification outside any group (the watchdog's heartbeat)."""
    p = row.payload or {}
    data = p.get("alert") or {
        "alertname": p.get("alertname", row.kind),
        "severity": p.get("severity", Severity.INFO),
        "labels": p.get("labels") or {},
        "summary": (p.get("annotations") or {}).get("summary") or p.get("alertname", row.kind),
        "started_at": p.get("started_at", row.created_at),
    }
    return GroupView.single(row.idempotency_key, row.receiver, AlertView.from_dict(data))
