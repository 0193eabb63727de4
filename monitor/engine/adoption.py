"""Taking a watch up (at start, or from a replica that died) and letting it go: which runs, which open
alerts, which detector state. No alert may resolve because the process restarted: detectors resume
from their saved snapshot; a detector without one keeps its restored alert from resolving until it
has seen enough again (``Evaluator.restore``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.orm import Session, sessionmaker

from monitor.engine.run_rules import STATE_VERSION
from monitor.samples import Sample
from monitor.storage import alerts_repo, rule_state_repo, runs_repo
from monitor.storage.series_tails import SeriesWrites

if TYPE_CHECKING:
    from monitor.config.schema import Watch
    from monitor.engine.checkpoints import CheckpointCounter
    from monitor.engine.evaluator import Evaluator
    from monitor.engine.polling import WatchPoller
    from monitor.engine.run_memory import RunMemory
    from monitor.engine.source_polls import SourcePolls
    from monitor.runs.run_stats import RunStats
    from monitor.storage.leases import Leases
    from monitor.storage.models import Run
    from monitor.storage.series_tails import SeriesTails

log = logging.getLogger(__name__)


class Holder(Protocol):
    """What taking a watch up and letting it go act on: the engine's parts (``cycle.Engine``)."""

    watches: dict[str, Watch]
    sessions: sessionmaker[Session]
    evaluator: Evaluator
    pollers: dict[str, WatchPoller]
    leases: Leases | None  # None: one process does all the work (SQLite)
    source_polls: SourcePolls
    series: SeriesTails

    def stats_of(self, run: Run, watch: Watch) -> RunStats: ...

    def forget(self, run: str) -> None: ...


class Adoption:
    """``engine``: the parts it acts on (``Holder``); ``memory``: the runs it takes up or lets go;
    ``checkpoints``: told when a run's state is saved; ``lock``: the engine's, held while a watch is
    taken up or let go."""

    def __init__(
        self, engine: Holder, memory: RunMemory, checkpoints: CheckpointCounter, lock: threading.RLock
    ) -> None:
        self.engine = engine
        self.memory = memory
        self.checkpoints = checkpoints
        self.lock = lock
        self._adopted: set[str] = set()

    @property
    def adopted(self) -> frozenset[str]:
        return frozenset(self._adopted)

    def adopt(self, watch: str, fresh: bool = True) -> None:
        """Take the watch up from what the database holds (``fresh``: its sources are awaited again)."""
        eng = self.engine
        with self.lock, eng.sessions() as s:
            runs = runs_repo.runs_of_watch(s, watch)
            warm, restored = self._take_up(s, watch, runs, with_watch=True)
            if fresh:
                eng.pollers[watch].health.awaiting(eng.watches[watch].targets())
        self._adopted.add(watch)
        log.info(
            "watch %s: taken up with %d runs (%d with their rule state) and %d open alerts",
            watch,
            len(runs),
            warm,
            restored,
        )

    def retake(self, watch: str, run_ids: Iterable[str]) -> None:
        """Runs set aside by a failed write (``isolation``): back to their state as saved."""
        wanted = set(run_ids)
        with self.lock, self.engine.sessions() as s:
            runs = [r for r in runs_repo.runs_of_watch(s, watch) if r.id in wanted]
            self._take_up(s, watch, runs, with_watch=False)

    def _take_up(self, s: Session, watch: str, runs: list, with_watch: bool) -> tuple[int, int]:
        eng = self.engine
        ids = {r.id for r in runs}
        states = rule_state_repo.load(s, ids)
        warm = 0
        for run in runs:
            self.memory.remember(self.memory.keep(run))
            eng.stats_of(run, eng.watches[watch])
            if eng.evaluator.import_state(run.id, states.get(run.id)):
                warm += 1
            if run.last_step is not None and run.last_step_at is not None:
                # the runs table is written every poll, the snapshot every few: the newest step
                # known (the evaluator ignores it if the snapshot is as new)
                eng.evaluator.observe(
                    Sample(
                        t=run.last_step_at, run=run.id, step=run.last_step, state=run.state, source=run.source
                    )
                )
        restored = 0
        for row in alerts_repo.load_active(s, [*ids, watch] if with_watch else list(ids)):
            if row.run_id in ids or (with_watch and row.run_id == watch):
                status = alerts_repo.status_of(row)
                eng.evaluator.restore(row.run_id, row.rule, row.labels or {}, status, row.id, kind=row.kind)
                restored += 1
        return warm, restored

    def let_go(self, watch: str) -> None:
        """Another replica polls this watch now: forget what this one knew, to re-read it on return."""
        eng = self.engine
        with self.lock:
            for run in [*self.memory.runs_of(watch), watch]:  # and the watch's own source alerts
                eng.forget(run)
            self.memory.cool(watch)
            if eng.leases is not None:  # another replica reports its polls now
                eng.source_polls.forget(watch)
        self._adopted.discard(watch)
        log.info("watch %s: handed over to another replica", watch)

    def reset(self, watch: str) -> None:
        """Back to what the database holds (a write of this watch failed and was rolled back): its runs,
        their rule state and open alerts are read again; its sources' health is kept."""
        eng = self.engine
        with self.lock:
            for run in [*self.memory.runs_of(watch), watch]:
                eng.forget(run)
            self.memory.cool(watch)
            self.adopt(watch, fresh=False)

    def checkpoint(self, s: Session, now: float) -> int:
        """Save the detector state and the chart series' bookkeeping of every run of the watches this
        process still holds (at shutdown). Returns the number of runs saved."""
        eng, saved, series = self.engine, 0, SeriesWrites()
        for watch in list(self.adopted):
            if eng.leases is not None and not eng.leases.holds(s, f"poll:{watch}", now):
                continue  # another replica has it now: its state is not ours to write
            runs = self.memory.runs_of(watch)
            self.save_state(s, runs, now)
            eng.series.unsaved(runs, series)
            saved += len(runs)
        series.flush(s)
        return saved

    def save_state(
        self, s: Session, runs: Iterable[str], now: float, into: dict[str, tuple[int, dict]] | None = None
    ) -> None:
        """Save the runs' detector state now, or (``into``) hand it to the batch being written."""
        eng = self.engine
        for run in runs:
            state = eng.evaluator.export_state(run)
            if state is not None:
                if into is not None:
                    into[run] = (STATE_VERSION, state)
                else:
                    rule_state_repo.save(s, run, STATE_VERSION, state, now)
                self.checkpoints.saved(run, now)
