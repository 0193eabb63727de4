"""The notification pipeline, stage by stage (after Alertmanager's notify pipeline):

1. enqueue (``enqueue``, in the engine's transaction): route, group, outbox row;
2. claim (``storage.outbox_store``): due rows, one message per group at a time, with a lease;
3. mute (``mute``): silences and inhibition;
4. compose (``compose``): the group's due rows into one ``GroupView``, or nothing worth telling;
5. send (``alerts.outbox.Dispatcher`` -> a notifier), retried with backoff by the dispatcher;
6. record (here): sent, with what it told of which alerts; a finished episode closes. A ``refresh``
   (the same alerts told again to a receiver that forgets) leaves the group's timers alone.

``Pipeline`` is the ``OutboxStore`` the dispatcher drives: it claims and records; it never sends.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy.orm import Session, sessionmaker

from alerts.inhibition import InhibitRule
from alerts.outbox import ClaimedNotification
from alerts.views import AlertView, GroupView
from monitor.delivery.compose import Composer
from monitor.delivery.enqueue import finished
from monitor.delivery.mute import Mutes
from monitor.storage import groups_repo, outbox_store
from monitor.storage.models import AlertGroup, Notification


class Pipeline:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        composer: Composer | None = None,
        inhibit_rules: Sequence[InhibitRule] = (),
    ) -> None:
        self.sessions = sessions
        self.composer = composer or Composer()
        self.inhibit_rules = tuple(inhibit_rules)

    # ---- claim, mute, compose ---------------------------------------------------------------------
    def claim_due(
        self, now: float, limit: int, worker: str, lease_seconds: float
    ) -> list[ClaimedNotification]:
        claimed: list[ClaimedNotification] = []
        with self.sessions.begin() as s:
            groups: dict[int, list[Notification]] = defaultdict(list)
            for row in outbox_store.due(s, now, limit * 4):
                if row.group_id is None:
                    if len(claimed) < limit and outbox_store.take(s, row, worker, now, lease_seconds):
                        claimed.append(ClaimedNotification(row.id, row.attempts, _single(row)))
                else:
                    groups[row.group_id].append(row)
            mutes: Mutes | None = None
            for gid, rows in groups.items():
                if len(claimed) >= limit:
                    break
                group = outbox_store.lock_group(s, gid)
                if group is None or outbox_store.sending(s, gid, now):
                    continue  # another replica delivers it right now, or a message of it is out
                expired = [r for r in rows if r.status == "sending"]
                batch = expired[:1] if expired else rows  # a re-send goes out as it was, under its own key
                carrier = batch[-1]
                if not outbox_store.take(s, carrier, worker, now, lease_seconds):
                    continue
                outbox_store.merge(batch, carrier)
                if mutes is None:
                    mutes = Mutes.load(s, now, self.inhibit_rules)
                composed = self.composer.compose(s, group, batch, mutes, now)
                if composed is None:
                    outbox_store.set_status(
                        s, carrier.id, "dropped", "nothing to tell: muted, or never announced"
                    )
                    s.flush()
                    self._close_if_finished(s, group, now)
                    continue
                told = {"announced": composed.announced, "resolved": composed.resolved}
                carrier.payload = {**(carrier.payload or {}), "told": {**told, "kind": composed.view.kind}}
                claimed.append(ClaimedNotification(carrier.id, carrier.attempts, composed.view))
        return claimed

    # ---- record ----------------------------------------------------------------------------------
    def mark_sent(self, id: int, now: float, ref: str | None) -> None:
        with self.sessions.begin() as s:
            group_id, payload = outbox_store.mark_sent(s, id, now, ref)
            if group_id is None:
                return
            told = (payload or {}).get("told") or {}
            if told.get("kind") != "refresh":  # a refresh tells nothing new: the group's timers keep running
                groups_repo.record_message(s, group_id, now, ref)
            groups_repo.mark_told(s, group_id, told.get("announced") or [], told.get("resolved") or [], now)
            s.flush()
            group = s.get(AlertGroup, group_id)
            if group is not None:
                self._close_if_finished(s, group, now)

    def mark_retry(self, id: int, now: float, next_attempt_at: float, error: str) -> None:
        with self.sessions.begin() as s:
            outbox_store.mark_retry(s, id, next_attempt_at, error)

    def mark_failed(self, id: int, now: float, error: str) -> None:
        with self.sessions.begin() as s:
            outbox_store.mark_failed(s, id, error)

    @staticmethod
    def _close_if_finished(s: Session, group: AlertGroup, now: float) -> None:
        if group.open_key is not None and finished(s, group):
            groups_repo.close(s, group, now)

    # ---- figures ---------------------------------------------------------------------------------
    def backlog(self) -> int:
        with self.sessions() as s:
            return outbox_store.backlog(s)

    def failed(self) -> int:
        with self.sessions() as s:
            return outbox_store.failed(s)

    def oldest_waiting(self) -> float | None:
        """When the oldest notification still waiting for delivery was written (None: none waits)."""
        with self.sessions() as s:
            return outbox_store.oldest_pending(s)


def _single(row: Notification) -> GroupView:
    """A notification outside any group (the watchdog's heartbeat)."""
    p = row.payload or {}
    data = p.get("alert") or {
        "alertname": p.get("alertname", row.kind),
        "severity": p.get("severity", "info"),
        "labels": p.get("labels") or {},
        "summary": (p.get("annotations") or {}).get("summary") or p.get("alertname", row.kind),
        "started_at": p.get("started_at", row.created_at),
    }
    return GroupView.single(row.idempotency_key, row.receiver, AlertView.from_dict(data))
