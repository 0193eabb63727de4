"""One run's data never takes the other runs of a watch with it (issue 37).

A batch is written in one transaction (``batching``). When it fails, each of its polls is written again
on its own, carefully: the watch's memory is reset to what the database holds (``Adoption.reset``), and
each run is persisted inside a savepoint of its own, its rows flushed there. A run whose write fails is
rolled back to its savepoint, forgotten (read again from the database at its next poll; its cursors are
not advanced, so its data is read again), and *set aside*: logged, noted on its row when that can be
written, and reported. The rest of the poll is written and committed.

``WriteHealth`` keeps, per watch, whether its polls' writes fail (a whole poll, or some runs set aside):
``write_failing`` (herowatch's own alert, critical: it pages) fires once that has lasted the watch's
``unavailable_after``, and ``/readyz`` is not ready meanwhile.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import update
from sqlalchemy.orm import Session

from alerts.model import Finding, Severity
from alerts.text import bounded, one_line, shown
from monitor.engine.batching import WriteJob, Writes
from monitor.engine.source_health import SCOPE, SourceHealthSpec
from monitor.storage.models import Run

if TYPE_CHECKING:
    from sqlalchemy.orm import sessionmaker

    from alerts.clock import Clock


class Rewriter(Protocol):
    """What a careful rewrite uses of the engine (the engine itself, without importing it here)."""

    sessions: sessionmaker[Session]
    clock: Clock
    adoption: Any
    leases_kept: Any
    write_health: WriteHealth

    def forget(self, run: str) -> None: ...

    def persist(self, s: Session, job: WriteJob, writes: Writes, guard: Any) -> None: ...


log = logging.getLogger(__name__)
MAX_LISTED = 10


class Plain:
    """A batch's first attempt: every run in the one transaction, nothing set aside."""

    bad: dict[str, str] = {}  # noqa: RUF012 - never written: the plain guard sets nothing aside

    def skip(self, run: str) -> bool:
        return False

    def run(self, run: str) -> AbstractContextManager[None]:
        return nullcontext()


@dataclass
class Careful:
    """A poll written again after its batch failed: each run in a savepoint of its own, flushed there; a
    run whose write fails is rolled back, forgotten (``forget``) and set aside (``bad``: run -> why)."""

    s: Session
    writes: Writes
    now: float
    forget: Callable[[str], None]
    bad: dict[str, str] = field(default_factory=dict)

    def skip(self, run: str) -> bool:
        return run in self.bad

    @contextmanager
    def run(self, run: str) -> Iterator[None]:
        point = self.s.begin_nested()
        try:
            yield
            self.writes.flush(self.s, self.now)
            self.s.flush()
        except Exception as exc:  # noqa: BLE001 - this run's data is set aside, the others are written
            point.rollback()
            self.writes.clear()
            self.bad[run] = bounded(f"{type(exc).__name__}: {exc}")
            self.forget(run)
            log.error(
                "writing run %s failed; it is set aside, the other runs are written: %s",
                shown(run),
                self.bad[run],
            )
        else:
            point.commit()

    def note(self) -> None:
        """Say on each set-aside run's row why it is not written (when that row can be written)."""
        for run, why in self.bad.items():
            point = self.s.begin_nested()
            try:
                self.s.execute(
                    update(Run).where(Run.id == run).values(source_error=bounded(f"not written: {why}"))
                )
                point.commit()
            except Exception:  # noqa: BLE001 - the log and the watch's write_failing alert say it anyway
                point.rollback()


def write_carefully(eng: Rewriter, job: WriteJob) -> None:
    """A poll whose batch failed, written again on its own: from what the database holds, each run in a
    savepoint of its own; a run whose write fails is set aside, the rest is written."""
    eng.adoption.reset(job.watch)  # what the failed attempt put in memory must not outlive it
    try:
        with eng.sessions.begin() as s:
            if job.watch not in eng.leases_kept.fence(s, [job.watch], eng.clock.time()):
                job.lost = True
                return
            writes = Writes()
            guard = Careful(s, writes, job.now, eng.forget)
            eng.persist(s, job, writes, guard)
            writes.flush(s, job.now)
            s.flush()
            guard.note()
    except Exception as exc:
        job.error = exc
        eng.write_health.failed(job.watch, job.now, one_line(f"{type(exc).__name__}: {exc}"))
        return
    if guard.bad:
        eng.adoption.retake(job.watch, guard.bad)  # forgotten mid-write: back to their saved state
    job.report.set_aside = dict(guard.bad)
    eng.write_health.written(job.watch, job.now, guard.bad)


@functools.cache
def write_rule(after: float) -> SourceHealthSpec:
    return SourceHealthSpec(
        name="write_failing",
        kind="source_unavailable",
        severity=Severity.CRITICAL,
        for_=after,
        labels={"source": "storage", "category": "herowatch"},
        annotations={
            "summary": "{run}: herowatch cannot write what it reads: {reason}",
            "description": "The polls of this watch (or of the runs listed) are read but cannot be written "
            "to herowatch's database: what they hold is not judged, and no alert about those runs can be "
            "sent. The other runs are written and watched.",
            "runbook_url": "{runbooks}#write-failing",
        },
    )


@dataclass
class _Failing:
    since: float
    error: str


class WriteHealth:
    """Per watch: do its polls' writes fail now, since when, and which runs are set aside."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failing: dict[str, _Failing] = {}

    def written(self, watch: str, now: float, set_aside: dict[str, str] | None = None) -> None:
        """A poll of ``watch`` was written (with ``set_aside`` runs left out)."""
        if not set_aside:
            with self._lock:
                self._failing.pop(watch, None)
            return
        runs = sorted(set_aside)
        listed = ", ".join(shown(r) for r in runs[:MAX_LISTED])
        more = f" and {len(runs) - MAX_LISTED} more" if len(runs) > MAX_LISTED else ""
        self.failed(watch, now, f"runs set aside (not written): {listed}{more}: {set_aside[runs[0]]}")

    def failed(self, watch: str, now: float, error: str) -> None:
        with self._lock:
            before = self._failing.get(watch)
            self._failing[watch] = _Failing(before.since if before else now, bounded(error, 1000))

    def error(self, watch: str) -> str | None:
        with self._lock:
            failing = self._failing.get(watch)
            return failing.error if failing is not None else None

    def finding(self, watch: str, now: float) -> Finding:
        error = self.error(watch)
        if error is None:
            return Finding(False, reason="the polls are written", extra_labels=SCOPE)
        return Finding(True, reason=error, extra_labels=SCOPE)
