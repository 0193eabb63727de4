"""Delivery's record stage: what became of the messages, in one transaction for several.

A message sent is recorded with what it told of which alerts (``Told``: the alerts announced, the
resolutions told) and restarts its group's timers unless it was a refresh; rows with nothing to tell
are recorded as dropped with the reason (``DropReason``); a retry or a failure is noted on its row.
An episode that is over (all of its alerts resolved and told) closes.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from sqlalchemy.orm import Session

from alerts.outbox import Outcome, SendStatus
from monitor.delivery.claim import GroupBatch
from monitor.delivery.plan import DropReason
from monitor.delivery.told import Told
from monitor.storage import groups_repo, outbox_store
from monitor.storage.statuses import OutboxStatus

log = logging.getLogger(__name__)
NOTHING_TOLD = Told("single")  # a sent row without a record (none of a group's rows lacks one)


def drops(s: Session, dropped: Sequence[tuple[GroupBatch, DropReason]], now: float, seen: Counter) -> None:
    """These groups' messages told nothing: their carriers recorded as dropped, with the reason."""
    if not dropped:
        return
    outbox_store.set_statuses(s, [(b.carrier.id, OutboxStatus.DROPPED, why.text) for b, why in dropped])
    s.flush()
    for b, why in dropped:
        seen[why] += 1
        log.info("notification %s to %s dropped: %s", b.carrier.id, b.group.receiver, why.text)
    close_finished(s, [(b.group.id, now) for b, _ in dropped])


def outcomes(s: Session, done: Sequence[Outcome]) -> None:
    """Record the outcomes of several sends, with a few statements for all of them."""
    sent = outbox_store.mark_sent_many(s, [(o.id, o.now, o.ref) for o in done if o.status is SendStatus.SENT])
    retry = [(o.id, o.next_attempt_at or o.now, o.error or "") for o in done if o.status is SendStatus.RETRY]
    outbox_store.mark_retry_many(s, retry)
    outbox_store.mark_failed_many(s, [(o.id, o.error or "") for o in done if o.status is SendStatus.FAILED])
    messages, told, groups = [], [], []
    for o in done:
        if o.id not in sent or sent[o.id][0] is None:
            continue
        group_id, payload = sent[o.id]
        t = Told.read(payload) or NOTHING_TOLD
        if t.restarts_timers:
            messages.append((group_id, o.now, o.ref))
        told.append((group_id, list(t.announced), list(t.resolved), o.now))
        groups.append((group_id, o.now))
    groups_repo.record_messages(s, messages)
    groups_repo.mark_told_many(s, told)
    close_finished(s, groups)


def close_finished(s: Session, groups: Sequence[tuple[int, float]]) -> None:
    """Close those of these episodes that are over (``enqueue.finished``): (group id, now) each."""
    over = groups_repo.settled_among(s, [g for g, _ in groups])
    groups_repo.close_many(s, [(g, now) for g, now in dict(groups).items() if g in over])
