"""A hang alert asks the run's wrappers for their stacks as it starts (pending, or firing at once), in
the cycle's transaction, so that its first page can carry them (``monitor.delivery.stacks_hold``).

Once per incident of a run (its ``symptom`` label: a stall and a telemetry alert of one hang are one
incident) and node (``monitor.stacks.broker``); the incident ends when one of its alerts resolves. A run
without a connected wrapper is not asked, and its page waits for nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy.orm import Session

from alerts.model import AlertState
from monitor.stacks.broker import StackBroker
from monitor.stacks.page import ASKING_KINDS
from monitor.storage import stacks_repo
from monitor.storage.models import Alert

log = logging.getLogger(__name__)


@dataclass
class StackAsks:
    broker: StackBroker  # its ``hold``: how long the first page waits for the answers, at most

    def on_change(self, s: Session, alert: Alert, to_state: AlertState, now: float) -> None:
        if alert.kind not in ASKING_KINDS:
            return
        incident = str((alert.labels or {}).get("symptom") or alert.rule)
        if to_state == AlertState.RESOLVED:
            self.broker.incident_over(alert.run_id)
            return
        if not to_state.active:
            return
        ask = self.broker.ask(alert.run_id, f"{alert.rule} started", incident)
        if ask is None:
            return
        stacks_repo.start(
            s,
            alert.run_id,
            ask.id,
            reason=ask.reason,
            requested_by="herowatch",
            at=now,
            hold_until=now + self.broker.hold,
            expected=ask.nodes,
        )
        log.info("stacks of %s asked from %d node(s): %s", alert.run_id, len(ask.nodes), ask.reason)
