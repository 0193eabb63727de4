"""Group commit: the polls that finish close together are written in one transaction, with a few
multi-row statements per table instead of a set of statements per run.

A poll reads its sources on its own (without the engine lock), then hands its results to
:class:`GroupCommit`. Its writer thread takes every result handed in so far, waits at most ``window``
seconds for the polls still reading their sources (and, when no poll waits for the batch, for more
results), and writes them all (``write``) while the next results queue up. A poll that waits and is
alone (tests, a quiet replica) is written at once. ``Writes`` collects the
rows of the batch that are written at its end.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from monitor.sources.base import PollResult
from monitor.storage import rule_state_repo, runs_repo
from monitor.storage.goodput_repo import GoodputWrites
from monitor.storage.models import Run
from monitor.storage.series_tails import SeriesWrites

WINDOW = 0.1  # seconds a batch waits at most for more results (see GroupCommit)


@dataclass
class WriteJob:
    """One watch's poll, to be written: its results, and what became of them."""

    watch: str
    results: dict[str, PollResult]
    known: dict[str, dict]
    now: float
    report: Any  # the cycle's CycleReport, filled in by the write
    lost: bool = False  # the lease was gone when the batch was written: nothing of it was
    error: BaseException | None = None  # the batch failed: nothing of it was written
    done: threading.Event = field(default_factory=threading.Event)
    submitted: float = 0.0  # time.monotonic() when handed in
    waited: bool = True  # the poll waits for it (else the engine's ``done`` callback takes the outcome)


@dataclass
class Writes:
    """Rows a batch changed, written together at its end (the run rows first: the others refer to them)."""

    runs: dict[str, Run] = field(default_factory=dict)
    cursors: dict[tuple[str, str], dict] = field(default_factory=dict)  # (run, source) -> cursor
    states: dict[str, tuple[int, dict]] = field(default_factory=dict)  # run -> (version, detector state)
    series: SeriesWrites = field(default_factory=SeriesWrites)
    goodput: GoodputWrites = field(default_factory=GoodputWrites)  # the runs' drained goodput ledgers

    def flush(self, s: Session, now: float) -> None:
        runs_repo.upsert_runs(s, self.runs.values())
        runs_repo.upsert_cursors(s, [(r, k, c) for (r, k), c in self.cursors.items()], now)
        self.series.flush(s)
        self.goodput.flush(s)
        rule_state_repo.save_many(s, {r: (v, st) for r, (v, st) in self.states.items()}, now)
        self.clear()

    def clear(self) -> None:
        """Forget the rows not written yet (a run's part rolled back: ``isolation.Careful``)."""
        self.runs.clear()
        self.cursors.clear()
        self.states.clear()
        self.series.buckets.clear()
        self.series.metas.clear()
        self.goodput.clear()


class GroupCommit:
    """Results handed in are written by one writer thread, in batches: all that waits when it is free
    (after at most ``window`` seconds for the polls still reading). ``submit(job)`` returns once the
    job is written; ``submit(job, wait=False)`` at once (``done(job)`` is then called once it is)."""

    def __init__(
        self,
        write: Callable[[list[WriteJob]], None],
        done: Callable[[WriteJob], None] | None = None,
        window: float = WINDOW,
    ) -> None:
        self._write = write
        self._done = done
        self.window = window
        self._queue: list[WriteJob] = []
        self._cv = threading.Condition()
        self._reading = 0  # polls reading their sources now: their results are worth waiting for
        self._writer: threading.Thread | None = None
        self._closed = False
        self._writing = False
        self.latencies: deque[float] = deque(maxlen=100_000)  # seconds from hand-in to written

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._cv:
            self._reading += 1
        try:
            yield
        finally:
            with self._cv:
                self._reading -= 1
                self._cv.notify_all()

    def submit(self, job: WriteJob, wait: bool = True) -> WriteJob:
        """Have ``job`` written with whatever else is waiting; with ``wait``, return once it was."""
        job.submitted = time.monotonic()
        job.waited = wait
        with self._cv:
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._run, name="batch-writer", daemon=True)
                self._writer.start()
            self._queue.append(job)
            self._cv.notify_all()
        if wait:
            job.done.wait()
        return job

    def drain(self, timeout: float = 60.0) -> None:
        """Return once every result handed in so far is written."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while (self._queue or self._writing) and (left := deadline - time.monotonic()) > 0:
                self._cv.wait(left)

    def close(self) -> None:
        """Write what is waiting, then stop the writer."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        if self._writer is not None:
            self._writer.join(timeout=30)

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._closed:
                    self._cv.wait()
                if not self._queue:
                    return
                # Wait for the polls still reading; with nobody waiting on the batch (the scheduler's
                # polls), for ``window`` after the oldest result too: fewer, bigger batches.
                deadline = min(j.submitted for j in self._queue) + self.window
                while (
                    (self._reading > 0 or not any(j.waited for j in self._queue))
                    and not self._closed
                    and (left := deadline - time.monotonic()) > 0
                ):
                    self._cv.wait(left)
                batch, self._queue = self._queue, []
                self._writing = True
            try:
                self._write(batch)
            except BaseException as exc:  # noqa: BLE001 - a writer bug fails the batch, not the writer
                for j in batch:
                    j.error = j.error or exc
            now = time.monotonic()
            for j in batch:
                self.latencies.append(now - j.submitted)
                if not j.waited and self._done is not None:
                    self._done(j)  # before ``done``: the watch's next poll waits for it
                j.done.set()
            with self._cv:
                self._writing = False
                self._cv.notify_all()
