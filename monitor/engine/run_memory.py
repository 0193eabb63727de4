"""What the engine holds of each run between polls (``RunMemory``, its one owner): the run's row and
its sources' cursors, as last written (the engine is their only writer while it holds the watch's
lease), so that a poll reads no row it wrote itself and the batch writes the rows from memory; which
watch each run belongs to, its labels, state and title; which watches are warm (read into memory).
And what the pages show of a run (its kind, the figures its panels draw: ``page_facts``)."""

from __future__ import annotations

import math
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from monitor import run_ids
from monitor.config.schema import Watch
from monitor.engine.batching import Writes
from monitor.rules.panels import Layouts
from monitor.runs.run_stats import RunStats
from monitor.samples import RunInfo
from monitor.sources.base import Cursor, PollResult
from monitor.storage import runs_repo
from monitor.storage.models import Run

if TYPE_CHECKING:
    from monitor.engine.evaluator import Evaluator

SHARED_NAMES_EVERY = 60.0  # seconds between reads of the display names several runs share
PRELOAD_CHUNK = 1000  # run ids in one query of ``preload``


class RunMemory:
    """The runs of the watches this process polls. ``lock``: the engine's lock, held while a batch
    writes; rows and cursors are replaced, never changed in place, so a poll reads them without it."""

    def __init__(self, watches: Mapping[str, Watch], sessions: sessionmaker[Session], lock: threading.RLock):
        self.watches = watches
        self.sessions = sessions
        self.lock = lock
        self._rows: dict[str, Run] = {}  # the rows of the runs this process polls, as written
        self._cursors: dict[str, dict[str, dict]] = {}  # source -> run -> cursor, as written
        self._warm: set[str] = set()  # watches whose runs and cursors are in memory
        self._run_watch: dict[str, str] = {}
        self._watch_runs: dict[str, dict[str, None]] = defaultdict(dict)  # watch -> its runs, in order
        self._labels: dict[str, dict[str, str]] = {}
        self._state: dict[str, str | None] = {}
        self._titles: dict[str, str] = {}  # run -> what people call it (monitor.run_ids.title)
        self._ambiguous: frozenset[str] = frozenset()  # display names several runs share ...
        self._ambiguous_at = -math.inf  # ... as read at this time (once a minute: one query, not per poll)

    # ---- what is known of a run --------------------------------------------------------------------
    def watch_of(self, run: str) -> Watch | None:
        return self.watches.get(self._run_watch.get(run, ""))

    def labels(self, run: str) -> dict[str, str]:
        labels = self._labels.get(run)
        if labels is not None:
            return labels
        watch = self.watches.get(run)  # the watch itself carries its source alerts
        return {**watch.labels, "watch": watch.name} if watch is not None else {}

    def stats_of(self, run: str) -> dict | None:
        """The run's stats as last written (None: not held)."""
        row = self._rows.get(run)
        return None if row is None else row.stats

    def title(self, run: str) -> str:
        return self._titles.get(run, run)

    def states(self) -> Mapping[str, str | None]:
        """Run -> its state as last polled (read-only)."""
        return self._state

    def set_state(self, run: str, state: str | None) -> None:
        self._state[run] = state

    def runs_of(self, watch: str) -> list[str]:
        return list(self._watch_runs.get(watch, ()))

    # ---- taking runs in and letting them go ---------------------------------------------------------
    def remember(self, run: Run) -> None:
        """Note the run's title, watch, state and labels as its row says."""
        self._titles[run.id] = run_ids.title(
            run.display_name, run.name, run.project, run.display_name in self._ambiguous
        )
        self._index(run.id, run.watch)
        self._state[run.id] = run.state
        self._labels[run.id] = {
            **self.watches[run.watch].labels,
            **{k: str(v) for k, v in (run.labels or {}).items()},
        }

    def _index(self, run: str, watch: str) -> None:
        old = self._run_watch.get(run)
        if old != watch:
            if old is not None:
                self._watch_runs[old].pop(run, None)
            self._run_watch[run] = watch
            self._watch_runs[watch][run] = None

    def keep(self, run: Run) -> Run:
        """Hold the run's row in memory (unless it is already): the engine writes it from there."""
        held = self._rows.setdefault(run.id, run)
        self._index(held.id, held.watch)
        return held

    def forget(self, run: str) -> None:
        """Drop the run's row and cursors (read again from the database when it is polled next)."""
        self._rows.pop(run, None)
        for by_run in self._cursors.values():
            by_run.pop(run, None)

    def cool(self, watch: str) -> None:
        """The watch's runs and cursors are to be read from the database again at its next poll."""
        self._warm.discard(watch)

    # ---- a poll: read before, written after ---------------------------------------------------------
    def known(self, watch: Watch, now: float) -> tuple[dict[str, dict], dict[str, str], dict[str, dict]]:
        """The watch's runs (their labels and names) and the sources' cursors: from memory once the
        watch was read (the engine writes them itself, fenced by the lease), else from the database."""
        if watch.name not in self._warm or now - self._ambiguous_at >= SHARED_NAMES_EVERY:
            rows: list[Run] = []
            stored: dict[str, dict[str, dict]] = {}
            with self.sessions() as s:  # read, then let the connection go before taking the engine lock
                cold = watch.name not in self._warm
                if cold:
                    rows = list(s.scalars(select(Run).where(Run.watch == watch.name)))
                    ids = [r.id for r in rows]
                    stored = {kind: runs_repo.cursors_for(s, kind, ids) for kind in watch.targets()}
                if now - self._ambiguous_at >= SHARED_NAMES_EVERY:
                    self._ambiguous, self._ambiguous_at = runs_repo.shared_display_names(s), now
            if cold:
                with self.lock:  # what memory holds already is newer than what was read
                    for r in rows:
                        self.keep(r)
                    for kind, by_run in stored.items():
                        mine = self._cursors.setdefault(kind, {})
                        for run_id, cursor in by_run.items():
                            mine.setdefault(run_id, cursor)
                    self._warm.add(watch.name)
        # Without the lock (a batch may be writing): runs and cursors are replaced, never changed in place.
        rows = [r for i in self.runs_of(watch.name) if (r := self._rows.get(i)) is not None]
        known = {r.id: dict(r.labels or {}) for r in rows}
        names = {r.id: r.name for r in rows if r.name}
        cursors = {}
        for kind in watch.targets():
            mine = self._cursors.get(kind, {})
            cursors[kind] = {r: dict(c) for r in known if (c := mine.get(r)) is not None}
        return known, names, cursors

    def preload(
        self, s: Session, results: Mapping[str, PollResult], known: Iterable[str], watch: str, now: float
    ) -> set[str]:
        """The runs of a poll that memory does not hold yet, in one query rather than one a run; those
        first seen now (a source described them) written in one upsert (the batch's other rows refer
        to them); the others are left to :meth:`run`. Returns the poll's runs."""
        infos = {info.run: info for res in results.values() for info in res.runs}
        ids = {*known, *infos, *(x.run for res in results.values() for x in res.samples)}
        missing = sorted(i for i in ids if i not in self._rows)
        if not missing:
            return ids
        found: list[Run] = []
        for i in range(0, len(missing), PRELOAD_CHUNK):
            found += s.scalars(select(Run).where(Run.id.in_(missing[i : i + PRELOAD_CHUNK])))
        for run in found:
            s.expunge(run)
        have = {r.id for r in found}
        new = [runs_repo.new_run(infos[i], watch, now) for i in missing if i not in have and i in infos]
        runs_repo.upsert_runs(s, new)
        for run in (*found, *new):
            self.keep(run)
        return ids

    def run(self, s: Session, info: RunInfo, watch: str, now: float, writes: Writes) -> Run:
        """The run in memory (read once from the database if this process has not seen it yet); a run
        first seen now is written at once (the batch's other rows refer to it)."""
        run_id = info.run
        run = self._rows.get(run_id)
        if run is None:
            run = s.get(Run, run_id)
            if run is not None:
                s.expunge(run)
            else:
                run = runs_repo.new_run(info, watch, now)
                runs_repo.upsert_runs(s, [run])
            run = self.keep(run)
        writes.runs[run_id] = run
        return run

    def cursors_read(self, kind: str, cursors: Mapping[str, Cursor], writes: Writes) -> None:
        """A source's new cursors (it answered), held and handed to the batch."""
        mine = self._cursors.setdefault(kind, {})
        for run_id, cursor in cursors.items():
            mine[run_id] = dict(cursor)
            writes.cursors[(run_id, kind)] = mine[run_id]


def page_facts(
    layouts: Layouts, drawn: frozenset[str], evaluator: Evaluator, run: Run, watch: Watch, stats: RunStats
) -> dict:
    """What the pages show of a run beyond its stats: its kind (configured, or inferred from what
    it logged) and the figures of the rules its panels draw (``drawn``: a rule's own baseline)."""
    if watch.kind is not None:
        kind, how, evidence = watch.kind, "configured", []
    else:
        (kind, evidence), how = layouts.infer(stats.seen), "inferred"
    run.kind = kind
    facts: dict = {"run_kind": {"name": kind, "how": how, "evidence": evidence}}
    if drawn:
        facts["figures"] = {
            rule.name: figures
            for rule, det in evaluator.detectors(run.id)
            if rule.name in drawn and (figures := finite(det.stats()))
        }
    return facts


def finite(figures: Mapping[str, object]) -> dict[str, float]:
    return {k: float(v) for k, v in figures.items() if isinstance(v, int | float) and math.isfinite(v)}
