"""The notification pipeline (after Alertmanager's notify pipeline), its stages in the order they run:

0. enqueue (``enqueue``, in the engine's transaction): route, group, outbox row;
1. claim (``claim``): due rows with a lease, one message per group at a time;
2. mute (``mute``): which members are silenced or inhibited now;
3. compose (``compose``, planned in ``plan``): each group's message, or a ``DropReason``;
4. drop or send: a message is handed to the dispatcher (``alerts.outbox.Dispatcher`` -> a notifier,
   retried with backoff), nothing to tell is recorded as dropped with its reason (``record.drops``);
5. record (``record.outcomes``): sent, with what it told of which alerts (``told.Told``); a finished
   episode closes. The dispatcher hands over the outcomes of several sends at once.

``Pipeline`` is the ``OutboxStore`` the dispatcher drives: ``claim_due`` runs stages 1-4 in one
transaction, ``record`` stage 5 in another; it never sends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sqlalchemy.orm import Session, sessionmaker

from alerts.inhibition import InhibitRule
from alerts.outbox import ClaimedNotification, Outcome, SendStatus
from alerts.silences import CompiledSilences
from monitor.delivery import record
from monitor.delivery.claim import Claim, GroupBatch
from monitor.delivery.compose import Composed, Composer
from monitor.delivery.mute import Mutes
from monitor.delivery.plan import DropReason
from monitor.delivery.stacks_hold import Hold
from monitor.storage import outbox_store


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
        self.dropped: Counter[DropReason] = Counter()  # messages with nothing to tell, by why (/metrics)

    # ---- stages 1-4: claim, mute, compose, drop or send ------------------------------------------
    def claim_due(
        self, now: float, limit: int, worker: str, lease_seconds: float
    ) -> list[ClaimedNotification]:
        """Claim up to ``limit`` messages in one transaction, set-based: a few statements for all."""
        with self.sessions.begin() as s:
            claim = Claim.open(s, now, limit, worker, lease_seconds)  # 1. claim
            claimed = claim.singles
            mutes: Mutes | None = None
            while len(claimed) < limit and (batches := claim.groups(limit - len(claimed))):
                if mutes is None:  # 2. mute (read once per claim)
                    mutes = Mutes.load(s, now, self.inhibit_rules, self.silences)
                muted = [mutes.of(b.members) for b in batches]
                composed = self.composer.compose_many(s, batches, muted, now)  # 3. compose
                sends, drops, holds = drop_or_send(batches, composed)  # 4. drop, hold or send
                record.drops(s, drops, now, self.dropped)
                outbox_store.hold(s, [(b.carrier.id, h.until, h.why) for b, h in holds])
                claimed += sends
        return claimed

    # ---- stage 5: record -------------------------------------------------------------------------
    def record(self, outcomes: Sequence[Outcome]) -> None:
        """Record the outcomes of several sends in one transaction (``mark_sent``, ``mark_retry`` and
        ``mark_failed`` record one)."""
        with self.sessions.begin() as s:
            record.outcomes(s, outcomes)

    def mark_sent(self, id: int, now: float, ref: str | None) -> None:
        self.record([Outcome(id, now, SendStatus.SENT, ref=ref)])

    def mark_retry(self, id: int, now: float, next_attempt_at: float, error: str) -> None:
        self.record([Outcome(id, now, SendStatus.RETRY, next_attempt_at=next_attempt_at, error=error)])

    def mark_failed(self, id: int, now: float, error: str) -> None:
        self.record([Outcome(id, now, SendStatus.FAILED, error=error)])

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


def drop_or_send(
    batches: Sequence[GroupBatch], composed: Sequence[Composed | DropReason | Hold]
) -> tuple[list[ClaimedNotification], list[tuple[GroupBatch, DropReason]], list[tuple[GroupBatch, Hold]]]:
    """Stage 4: a composed message goes out, its record on its carrier row (read back at stage 5);
    nothing to tell is dropped, with the reason; a hang's first page waiting for stacks is held."""
    sends, drops, holds = [], [], []
    for b, c in zip(batches, composed, strict=True):
        if isinstance(c, DropReason):
            drops.append((b, c))
            continue
        if isinstance(c, Hold):
            holds.append((b, c))
            continue
        carrier = b.carrier
        carrier.payload = c.told.into(carrier.payload)
        sends.append(ClaimedNotification(carrier.id, carrier.attempts, c.view))
    return sends, drops, holds
