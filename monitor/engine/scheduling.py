"""APScheduler 3 jobs: one interval job per watch (coalesced, one instance at a time, jittered), and
the outbox dispatcher. Intervals are on the engine's clock; with a sped-up clock they shrink in real time.

A job still running when its next turn comes is skipped (one instance at a time). APScheduler warns
about that at every turn; herowatch says it instead, at most once per job every ``SKIP_LOG_EVERY``
seconds, with how long the job has been running and how many turns it skipped; a job that overran its
turn by less than ``SLOW_AFTER`` seconds (the first poll of a sped-up demo) is counted, not said.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobSubmissionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

log = logging.getLogger(__name__)
SKIP_LOG_EVERY = 300.0
SLOW_AFTER = 10.0  # a job running this long when it skips a turn is worth a warning


class _NoSkipWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "maximum number of running instances reached" not in record.getMessage()


class _Skips:
    """Jobs running now (since when), and the turns they skipped since they were last reported."""

    def __init__(self) -> None:
        self.running: dict[str, float] = {}
        self.skipped: dict[str, int] = {}
        self.said: dict[str, float] = {}
        self.lock = threading.Lock()

    def on_skip(self, event: JobSubmissionEvent) -> None:
        now = time.monotonic()
        with self.lock:
            job = str(event.job_id)
            self.skipped[job] = self.skipped.get(job, 0) + 1
            since = self.running.get(job)
            if since is not None and now - since < SLOW_AFTER:
                return  # a turn that came while the job was finishing: nothing anyone should act on
            if now - self.said.get(job, -1e18) < SKIP_LOG_EVERY:
                return
            self.said[job], n = now, self.skipped.pop(job)
        running = f"has been running for {now - since:.0f}s" if since is not None else "is still running"
        log.warning(
            "job %s %s; skipped %d turn(s) meanwhile (said at most every %.0fs)",
            job,
            running,
            n,
            SKIP_LOG_EVERY,
        )


_SKIPS = _Skips()
logging.getLogger("apscheduler.scheduler").addFilter(_NoSkipWarnings())
logging.getLogger("apscheduler.executors.default").addFilter(_NoSkipWarnings())


def make_scheduler(workers: int = 8) -> BackgroundScheduler:
    scheduler = BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(workers)},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30},
        timezone=UTC,
    )
    scheduler.add_listener(_SKIPS.on_skip, EVENT_JOB_MAX_INSTANCES)
    return scheduler


def _guarded(name: str, fn: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        with _SKIPS.lock:
            _SKIPS.running[name] = time.monotonic()
        try:
            fn()
        except Exception:  # one failing job must not stop the others, nor the scheduler
            log.exception("job %s failed", name)
        finally:
            with _SKIPS.lock:
                _SKIPS.running.pop(name, None)

    run.__name__ = name
    return run


def add_interval_job(
    scheduler: BackgroundScheduler,
    name: str,
    fn: Callable[[], object],
    seconds: float,
    jitter: float = 0.0,
    start_now: bool = True,
    first_in: float = 0.0,
) -> None:
    """``first_in``: seconds until the first run (0: now); ``start_now=False``: paused until resumed."""
    scheduler.add_job(
        _guarded(name, fn),
        "interval",
        seconds=max(0.05, seconds),
        id=name,
        name=name,
        jitter=jitter or None,
        replace_existing=True,
        next_run_time=datetime.now(UTC) + timedelta(seconds=first_in) if start_now else None,
    )
