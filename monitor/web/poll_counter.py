"""Counts poll cycles as the scheduler runs them, for ``/metrics``.

The poll jobs (ids ``poll:<watch>``, see ``Service.start``) run on APScheduler; a listener on its
job events counts every cycle that ran, and every one the scheduler had to skip (missed or refused
because the previous cycle of that watch was still running: a sign polls are too slow). For each
cycle that ran it also records how late it finished (wall seconds from its scheduled start to the end
of the cycle: polls on time finish within seconds) and counts the source errors its report names.
"""

from __future__ import annotations

import threading
import time
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
DELAY_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)  # seconds


class PollCounter:
    def __init__(self, wall: Any = time.time) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()
        self._errors: Counter[str] = Counter()  # source kind -> failed polls
        self._delays: dict[str, list[float]] = {}  # watch -> per-bucket counts (+Inf last), sum
        self._lock = threading.Lock()
        self._attached: set[int] = set()
        self._wall = wall  # the scheduler's clock: APScheduler schedules in wall time

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
        watch = job_id[len("poll:") :]
        scheduled = getattr(event, "scheduled_run_time", None)
        errors = getattr(getattr(event, "retval", None), "errors", None) or {}
        with self._lock:
            self._counts[(watch, outcome)] += 1
            for kind in errors:
                self._errors[kind] += 1
            if outcome in ("ran", "error") and scheduled is not None:
                self._observe_delay(watch, max(0.0, self._wall() - scheduled.timestamp()))

    def _observe_delay(self, watch: str, seconds: float) -> None:
        h = self._delays.setdefault(watch, [0.0] * (len(DELAY_BUCKETS) + 2))
        for i, bound in enumerate(DELAY_BUCKETS):
            if seconds <= bound:
                h[i] += 1
        h[-2] += 1  # +Inf: every cycle
        h[-1] += seconds

    def counts(self) -> dict[tuple[str, str], int]:
        """(watch, outcome) -> cycles; outcome: ran, error, missed, overlapping."""
        with self._lock:
            return dict(self._counts)

    def source_errors(self) -> dict[str, int]:
        """Source kind -> polls that came back with an error from it."""
        with self._lock:
            return dict(self._errors)

    def delays(self) -> dict[str, tuple[list[tuple[str, float]], float]]:
        """Watch -> (cumulative (upper bound, count) buckets, +Inf last; sum of seconds)."""
        with self._lock:
            return {
                w: ([*((repr(b), h[i]) for i, b in enumerate(DELAY_BUCKETS)), ("+Inf", h[-2])], h[-1])
                for w, h in self._delays.items()
            }
