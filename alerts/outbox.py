"""The durable outbox's delivery loop.

Notifications are written by whoever changes alert state, in the same transaction. This module
claims due rows from an ``OutboxStore``, hands them to the receiver's notifier and records the
outcome: sent (with the receiver's reference), retried later with backoff (or Retry-After), or
failed for good. A crash between claim and send leaves a claim that expires and is taken again; the
idempotency key lets a notifier that can check (Slack) avoid a second post.
"""

from __future__ import annotations

import enum
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from alerts.notifiers.base import Notifier, SendResult
from alerts.views import GroupView

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimedNotification:
    id: int
    attempts: int
    view: GroupView


class SendStatus(enum.StrEnum):
    """What became of one send."""

    SENT = "sent"
    RETRY = "retry"  # it failed and may succeed later: tried again after a backoff
    FAILED = "failed"  # for good


@dataclass(frozen=True)
class Outcome:
    """What became of one send, for the store to record."""

    id: int
    now: float
    status: SendStatus
    ref: str | None = None  # sent: the receiver's reference
    next_attempt_at: float | None = None  # retry: when
    error: str | None = None  # retry, failed: why


class OutboxStore(Protocol):
    def claim_due(
        self, now: float, limit: int, worker: str, lease_seconds: float
    ) -> Sequence[ClaimedNotification]: ...

    def mark_sent(self, id: int, now: float, ref: str | None) -> None: ...

    def mark_retry(self, id: int, now: float, next_attempt_at: float, error: str) -> None: ...

    def mark_failed(self, id: int, now: float, error: str) -> None: ...


@runtime_checkable
class BatchRecorder(Protocol):
    """A store that can also record several outcomes at once (one transaction for all of them)."""

    def record(self, outcomes: Sequence[Outcome]) -> None: ...


@dataclass(frozen=True)
class RetryPolicy:
    base: float = 2.0
    factor: float = 2.0
    max_delay: float = 300.0
    max_attempts: int = 12
    jitter: float = 0.2

    def delay(
        self, attempts: int, retry_after: float | None, rand: Callable[[], float] = random.random
    ) -> float:
        if retry_after is not None and retry_after >= 0:
            return retry_after
        d = min(self.max_delay, self.base * self.factor ** max(0, attempts - 1))
        return d * (1 + self.jitter * (2 * rand() - 1))


class Dispatcher:
    def __init__(
        self,
        store: OutboxStore,
        notifiers: Mapping[str, Notifier],
        clock: Callable[[], float],
        worker: str = "herowatch",
        policy: RetryPolicy | None = None,
        lease_seconds: float = 60.0,
        observer: Callable[[str, float, str], None] | None = None,
        timer: Callable[[], float] = time.perf_counter,
        record_within: float = 0.5,
    ) -> None:
        self.store = store
        self.notifiers = notifiers
        self.clock = clock
        self.worker = worker
        self.policy = policy or RetryPolicy()
        self.lease_seconds = lease_seconds
        # told (receiver, seconds the send took, outcome: sent, retry or failed) after each attempt
        self.observer = observer
        self.timer = timer  # a stopwatch for the send latency, not the alerting clock
        self.record_within = record_within  # real seconds a send may wait for its batch to be recorded

    def run_once(self, limit: int = 100) -> int:
        """Deliver what is due. Returns how many were sent.

        A store that records in batches (``BatchRecorder``) gets the outcomes together: all of them at
        the end, or earlier once the oldest unrecorded one is ``record_within`` seconds old (a send is
        recorded at most that long after it; a crash before its record redelivers it, as a crash
        between a send and its record always has). Any other store records each send right after it."""
        sent = 0
        record = self.store.record if isinstance(self.store, BatchRecorder) else None
        pending: list[Outcome] = []
        oldest = 0.0
        try:
            for claimed in self.store.claim_due(self.clock(), limit, self.worker, self.lease_seconds):
                started = self.timer()
                result = self._send(claimed)
                outcome = self._outcome(claimed, result, self.timer() - started)
                sent += outcome.status is SendStatus.SENT
                if record is None:
                    self._record_one(outcome)
                    continue
                if not pending:
                    oldest = started
                pending.append(outcome)
                if self.timer() - oldest >= self.record_within:
                    batch, pending = pending, []
                    record(batch)
        finally:  # what was sent is recorded even when something fails on the way
            if pending and record is not None:
                record(pending)
        return sent

    def _outcome(self, claimed: ClaimedNotification, result: SendResult, took: float) -> Outcome:
        now = self.clock()
        attempts = claimed.attempts + 1
        retry = not result.ok and result.retry and attempts < self.policy.max_attempts
        if self.observer is not None:
            outcome = SendStatus.SENT if result.ok else (SendStatus.RETRY if retry else SendStatus.FAILED)
            self.observer(claimed.view.receiver, took, outcome)
        if result.ok:
            return Outcome(claimed.id, now, SendStatus.SENT, ref=result.ref)
        error = result.error or "unknown error"
        if retry:
            delay = self.policy.delay(attempts, result.retry_after)
            log.warning(
                "notification %s to %s failed (%s); retrying in %.0fs",
                claimed.id,
                claimed.view.receiver,
                result.error,
                delay,
            )
            return Outcome(claimed.id, now, SendStatus.RETRY, next_attempt_at=now + delay, error=error)
        log.error(
            "notification %s to %s failed for good: %s", claimed.id, claimed.view.receiver, result.error
        )
        return Outcome(claimed.id, now, SendStatus.FAILED, error=error)

    def _record_one(self, o: Outcome) -> None:
        if o.status is SendStatus.SENT:
            self.store.mark_sent(o.id, o.now, o.ref)
        elif o.status is SendStatus.RETRY:
            self.store.mark_retry(o.id, o.now, o.next_attempt_at or o.now, o.error or "unknown error")
        else:
            self.store.mark_failed(o.id, o.now, o.error or "unknown error")

    def _send(self, claimed: ClaimedNotification) -> SendResult:
        notifier = self.notifiers.get(claimed.view.receiver)
        if notifier is None:
            return SendResult.permanent(f"no receiver named {claimed.view.receiver!r}")
        try:
            return notifier.send(claimed.view)
        except Exception as exc:  # a notifier bug must not stop delivery of the others
            log.exception("notifier for %s raised", claimed.view.receiver)
            return SendResult.transient(f"{type(exc).__name__}: {exc}")
