"""Group commit: the polls that finish close together are written in one transaction, with a few
multi-row statements per table instead of a set of statements per run.

A poll reads its sources on its own (without the engine lock), then hands its results to
:class:`GroupCommit` and waits. One of the waiting polls (the leader) takes every result handed in
so far, waits at most ``window`` seconds for the polls still reading their sources, and writes them
all (``write``); the others return when their result is written. A poll alone (tests, a quiet
replica) is written at once. ``Writes`` collects the rows of the batch that are written at its end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from monitor.sources.base import PollResult
from monitor.storage import rule_state_repo, runs_repo
from monitor.storage.models import Run
from monitor.storage.series_tails import SeriesWrites

WINDOW = 0.05  # seconds a batch waits at most for the polls still reading their sources


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


@dataclass
class Writes:
    """Rows a batch changed, written together at its end (the run rows first: the others refer to them)."""

    runs: dict[str, Run] = field(default_factory=dict)
    cursors: dict[tuple[str, str], dict] = field(default_factory=dict)  # (run, source) -> cursor
    states: dict[str, tuple[int, dict]] = field(default_factory=dict)  # run -> (version, detector state)
    series: SeriesWrites = field(default_factory=SeriesWrites)

    def flush(self, s: Session, now: float) -> None:
        runs_repo.upsert_runs(s, self.runs.values())
        runs_repo.upsert_cursors(s, [(r, k, c) for (r, k), c in self.cursors.items()], now)
        self.series.flush(s)
        rule_state_repo.save_many(s, {r: (v, st) for r, (v, st) in self.states.items()}, now)
        self.runs.clear()
        self.cursors.clear()
        self.states.clear()


class GroupCommit:
    def __init__(self, write: Callable[[list[WriteJob]], None], window: float = WINDOW) -> None:
        self._write = write
        self.window = window
        self._queue: list[WriteJob] = []
        self._cv = threading.Condition()
        self._leader = threading.Lock()
        self._reading = 0  # polls reading their sources now: their results are worth waiting for

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

    def submit(self, job: WriteJob) -> WriteJob:
        """Have ``job`` written (in a batch with whatever else is waiting); returns once it was."""
        with self._cv:
            self._queue.append(job)
            self._cv.notify_all()
        with self._leader:
            if not job.done.is_set():
                deadline = time.monotonic() + self.window
                with self._cv:
                    while self._reading > 0 and (left := deadline - time.monotonic()) > 0:
                        self._cv.wait(left)
                    batch, self._queue = self._queue, []
                try:
                    self._write(batch)
                finally:
                    for j in batch:
                        j.done.set()
        return job
