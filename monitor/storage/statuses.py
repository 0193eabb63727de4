"""What an outbox row is and where it stands: the values of ``notifications.kind`` and
``notifications.status``, stored as their strings (a ``StrEnum`` compares equal to its value)."""

from __future__ import annotations

import enum


class OutboxStatus(enum.StrEnum):
    PENDING = "pending"  # waiting for its time (``next_attempt_at``)
    SENDING = "sending"  # claimed by a worker until ``claim_expires_at``
    SENT = "sent"
    FAILED = "failed"  # for good: the receiver refused it, or it ran out of attempts
    DROPPED = "dropped"  # nothing to tell when it was due (``last_error`` says why)
    MERGED = "merged"  # went out as part of another row's message (``merged_into``)


BUSY = (OutboxStatus.PENDING, OutboxStatus.SENDING)  # not delivered yet


class NotificationKind(enum.StrEnum):
    CHANGE = "change"  # an alert fired or resolved (or, muted when it fired, may be told now)
    ACK = "ack"  # someone acknowledged an alert
    REPEAT = "repeat"  # a reminder: what was told still fires
    REFRESH = "refresh"  # the same alerts told again to a receiver that forgets (Alertmanager)
    HEARTBEAT = "heartbeat"  # the watchdog's dead man's switch, outside any group
