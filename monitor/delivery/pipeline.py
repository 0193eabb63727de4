"""The notification pipeline, stage by stage (after Alertmanager's notify pipeline):

1. enqueue (``enqueue``, in the engine's transaction): route, group, outbox row;
2. claim (``storage.outbox_store``): due rows, one message per group at a time, with a lease; the
   groups of a claim are locked and read together (a few statements for up to ``limit`` messages);
3. mute (``mute``): silences and inhibition;
4. compose (``compose``): the group's due rows into one ``GroupView``, or nothing worth telling;
5. send (``alerts.outbox.Dispatcher`` -> a notifier), retried with backoff by the dispatcher;
6. record (here): sent, with what it told of which alerts; a finished episode closes. A ``refresh``
   (the same alerts told again to a receiver that forgets) leaves the group's timers alone. The
   dispatcher hands over the outcomes of several sends at once (``record``: one transaction).

``Pipeline`` is the ``OutboxStore`` the dispatcher drives: it claims and records; it never sends.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy.orm import Session, sessionmaker

from alerts.inhibition import InhibitRule
from alerts.outbox import ClaimedNotification, Outcome, SendStatus
from alerts.silences import CompiledSilences
from alerts.views import AlertView, GroupView
from monitor.delivery.compose import Composer
from monitor.delivery.mute import Mutes
from monitor.storage import groups_repo, outbox_store
from monitor.storage.models import Notification
from monitor.storage.statuses import OutboxStatus


class Pipeline:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        composer: Composer | None = None,
        inhibit_rules: Sequence[InhibitRule] = (),
        silences: CompiledSilences | None = None,
    ) -> None:
        self.sessions = sessions
        self.composer = composer or Composer()
        self.inhibit_rules = tuple(inhibit_rules)
        # the silences' compiled matchers, kept while each is in force (shared with the web side)
        self.silences = silences or CompiledSilences()

    # ---- claim, mute, compose ---------------------------------------------------------------------
    def claim_due(
        self, now: float, limit: int, worker: str, lease_seconds: float
    ) -> list[ClaimedNotification]:
        """Claim up to ``limit`` messages in one transaction, set-based: the due rows, their groups locked
        together, the groups' members, titles and runs read for all of them at once."""
        claimed: list[ClaimedNotification] = []
        with self.sessions.begin() as s:
            groups: dict[int, list[Notification]] = defaultdict(list)
            singles: list[Notification] = []
            for row in outbox_store.due(s, now, limit * 4):
                if row.group_id is None:
                    singles.append(row)
                else:
                    groups[row.group_id].append(row)
            taken = outbox_store.take_many(s, singles[:limit], worker, now, lease_seconds)
            claimed += [ClaimedNotification(r.id, r.attempts, _single(r)) for r in singles if r.id in taken]
            locked = outbox_store.lock_groups(s, list(groups))  # another replica's are left out
            out = outbox_store.sending_groups(s, list(locked), now)  # a message of theirs is out
            ready = [gid for gid in groups if gid in locked and gid not in out]
            mutes: Mutes | None = None
            while ready and len(claimed) < limit:  # as many groups as may still be claimed, together
                chunk, ready = ready[: limit - len(claimed)], ready[limit - len(claimed) :]
                batches = []
                for gid in chunk:
                    rows = groups[gid]
                    expired = [r for r in rows if r.status == OutboxStatus.SENDING]
                    batches.append(expired[:1] if expired else rows)  # a re-send goes out as it was
                taken = outbox_store.take_many(s, [b[-1] for b in batches], worker, now, lease_seconds)
                batches = [b for b in batches if b[-1].id in taken]
                for b in batches:
                    outbox_store.merge(b, b[-1])
                if mutes is None:
                    mutes = Mutes.load(s, now, self.inhibit_rules, self.silences)
                pairs = [(locked[b[-1].group_id], b) for b in batches]
                dropped = []
                composed_all = self.composer.compose_many(s, pairs, mutes, now)
                for (group, b), composed in zip(pairs, composed_all, strict=True):
                    carrier = b[-1]
                    if composed is None:
                        dropped.append((carrier.id, group.id))
                        continue
                    told = {"announced": composed.announced, "resolved": composed.resolved}
                    carrier.payload = {
                        **(carrier.payload or {}),
                        "told": {**told, "kind": composed.view.kind},
                    }
                    claimed.append(ClaimedNotification(carrier.id, carrier.attempts, composed.view))
                if dropped:
                    reason = "nothing to tell: muted, or never announced"
                    outbox_store.set_statuses(s, [(i, OutboxStatus.DROPPED, reason) for i, _ in dropped])
                    s.flush()
                    self._close_finished(s, [(g, now) for _, g in dropped])
        return claimed

    # ---- record ----------------------------------------------------------------------------------
    def record(self, outcomes: Sequence[Outcome]) -> None:
        """Record the outcomes of several sends in one transaction, with a few statements for all of them
        (``mark_sent``, ``mark_retry`` and ``mark_failed`` record one)."""
        with self.sessions.begin() as s:
            sent = outbox_store.mark_sent_many(
                s, [(o.id, o.now, o.ref) for o in outcomes if o.status is SendStatus.SENT]
            )
            outbox_store.mark_retry_many(
                s,
                [
                    (o.id, o.next_attempt_at or o.now, o.error or "")
                    for o in outcomes
                    if o.status is SendStatus.RETRY
                ],
            )
            outbox_store.mark_failed_many(
                s, [(o.id, o.error or "") for o in outcomes if o.status is SendStatus.FAILED]
            )
            messages, told, groups = [], [], []
            for o in outcomes:
                if o.id not in sent or sent[o.id][0] is None:
                    continue
                group_id, payload = sent[o.id]
                t = (payload or {}).get("told") or {}
                if t.get("kind") != "refresh":  # a refresh tells nothing new: the group's timers keep running
                    messages.append((group_id, o.now, o.ref))
                told.append((group_id, t.get("announced") or [], t.get("resolved") or [], o.now))
                groups.append((group_id, o.now))
            groups_repo.record_messages(s, messages)
            groups_repo.mark_told_many(s, told)
            self._close_finished(s, groups)

    def mark_sent(self, id: int, now: float, ref: str | None) -> None:
        self.record([Outcome(id, now, SendStatus.SENT, ref=ref)])

    def mark_retry(self, id: int, now: float, next_attempt_at: float, error: str) -> None:
        self.record([Outcome(id, now, SendStatus.RETRY, next_attempt_at=next_attempt_at, error=error)])

    def mark_failed(self, id: int, now: float, error: str) -> None:
        self.record([Outcome(id, now, SendStatus.FAILED, error=error)])

    @staticmethod
    def _close_finished(s: Session, groups: Sequence[tuple[int, float]]) -> None:
        """Close those of these episodes that are over (``enqueue.finished``): (group id, now) each."""
        over = groups_repo.settled_among(s, [g for g, _ in groups])
        groups_repo.close_many(s, [(g, now) for g, now in dict(groups).items() if g in over])

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
