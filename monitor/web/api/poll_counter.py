"""Counts poll cycles as the scheduler runs them, for ``/metrics``.

The poll jobs (ids ``poll:<watch>``, see ``Service.start``) run on APScheduler; a listener on its
job events counts every cycle that ran, and every one the scheduler had to skip (missed or refused
because the previous cycle of that watch was still running: a sign polls are too slow).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED

OUTCOMES = {
    EVENT_JOB_EXECUTED: "ran",
    EVENT_JOB_ERROR: "error",
    EVENT_JOB_MISSED: "missed",
    EVENT_JOB_MAX_INSTANCES: "overlapping",
}
MASK = EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES


class PollCounter:
    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._attached: set[int] = set()

    def attach(self, scheduler: Any) -> None:
        """Listen to a scheduler's job events (once per scheduler)."""
        if scheduler is None or id(scheduler) in self._attached:
            return
        self._attached.add(id(scheduler))
        scheduler.add_listener(self.on_event, MASK)

    def on_event(self, event: Any) -> None:
        job_id = getattr(event, "job_id", "") or ""
        if not job_id.startswith("poll:"):
            return
        outcome = OUTCOMES.get(event.code)
        if outcome is None:
            return
        with self._lock:
            self._counts[(job_id[len("poll:") :], outcome)] += 1

    def counts(self) -> dict[tuple[str, str], int]:
        """(watch, outcome) -> cycles; outcome: ran, error, missed, overlapping."""
        with self._lock:
            return dict(self._counts)
