"""Alert events into storage, in the cycle's transaction: the instance row, its transition, and the
notifications the change causes (``delivery``); and the text of firing alerts kept current."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from sqlalchemy.orm import Session

from alerts.model import AlertState
from monitor.engine.evaluator import AlertEvent, Evaluator
from monitor.storage import alerts_repo
from monitor.storage.models import Alert

log = logging.getLogger(__name__)


class Delivery(Protocol):
    """Where an alert's state changes go on (``monitor.delivery.enqueue.Enqueuer``): called in the
    cycle's transaction, for firing and resolved only."""

    def on_transition(self, s: Session, alert: Alert, to_state: AlertState, now: float) -> object: ...


Hinter = Callable[[Session, AlertEvent, float], "dict[str, Any] | None"]


class Asks(Protocol):
    """Who hears of every state change first (``engine.stack_asks.StackAsks``: a hang asks for stacks)."""

    def on_change(self, s: Session, alert: Alert, to_state: AlertState, now: float) -> None: ...


class Recorder:
    def __init__(
        self, evaluator: Evaluator, delivery: Delivery, hints: Hinter | None = None, asks: Asks | None = None
    ) -> None:
        self.evaluator = evaluator
        self.delivery = delivery
        self.hints = hints  # culprit hints for an alert that fires (``engine.fleet``)
        self.asks = asks  # before delivery: what it asks is on record when the page is composed

    def record(self, s: Session, events: Iterable[AlertEvent], now: float) -> None:
        for event in events:
            key, tr = event.key, event.transition
            change = alerts_repo.AlertChange(
                fingerprint=key.fingerprint,
                rule=key.rule.name,
                kind=key.rule.kind,
                run=key.run,
                metric=key.rule.metric,
                severity=key.rule.severity.value,
                labels=key.labels,
                annotations=event.annotations,
                transition=tr,
                status=event.status,
                value=event.finding.value,
                threshold=event.finding.threshold,
                step=event.finding.step,
                hints=self.hints(s, event, now) if self.hints and tr.to_state is AlertState.FIRING else None,
            )
            row = alerts_repo.record_change(s, change, event.ref, now)
            if tr.to_state.active:
                self.evaluator.set_ref(key.fingerprint, row.id)
            if self.asks is not None:
                self.asks.on_change(s, row, tr.to_state, now)
            if tr.to_state in (AlertState.FIRING, AlertState.RESOLVED):
                self.delivery.on_transition(s, row, tr.to_state, now)
            log.info(
                "alert %s %s -> %s for %s: %s",
                key.rule.name,
                tr.from_state.value,
                tr.to_state.value,
                key.run,
                tr.reason,
            )

    def refresh(self, s: Session, run: str, now: float) -> None:
        """Render the annotations of the run's firing alerts again (Prometheus does, at every
        evaluation): "no new step for 32m" stays true while the stall goes on."""
        for alert, finding, text in self.evaluator.current(run, now):
            if alert.ref is not None:
                alerts_repo.refresh_annotations(s, alert.ref, text, finding.value, finding.step)
