"""APScheduler 3 jobs: one interval job per watch (coalesced, one instance at a time, jittered), and
the outbox dispatcher. Intervals are on the engine's clock; with a sped-up clock they shrink in real time."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

log = logging.getLogger(__name__)


def make_scheduler(workers: int = 8) -> BackgroundScheduler:
    return BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(workers)},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30},
        timezone=UTC,
    )


def _guarded(name: str, fn: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except Exception:  # one failing job must not stop the others, nor the scheduler
            log.exception("job %s failed", name)

    run.__name__ = name
    return run


def add_interval_job(
    scheduler: BackgroundScheduler,
    name: str,
    fn: Callable[[], object],
    seconds: float,
    jitter: float = 0.0,
    start_now: bool = True,
) -> None:
    scheduler.add_job(
        _guarded(name, fn),
        "interval",
        seconds=max(0.05, seconds),
        id=name,
        name=name,
        jitter=jitter or None,
        replace_existing=True,
        next_run_time=datetime.now(UTC) if start_now else None,
    )
