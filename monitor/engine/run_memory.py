"""What the engine holds of each run between polls: the run's row and its sources' cursors, as last
written (the engine is their only writer while it holds the watch's lease), so that a poll reads no
row it wrote itself and the batch writes the rows from memory; and what the pages show of a run (its kind,
the figures its panels draw)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.config.schema import Watch
from monitor.engine.batching import Writes
from monitor.runs.run_stats import RunStats
from monitor.samples import RunInfo
from monitor.storage import runs_repo
from monitor.storage.models import Run

SHARED_NAMES_EVERY = 60.0  # seconds between reads of the display names several runs share

if TYPE_CHECKING:
    from monitor.engine.cycle import Engine


def known(eng: Engine, watch: Watch) -> tuple[dict[str, dict], dict[str, str], dict[str, dict]]:
    """The watch's runs (their labels and names) and the sources' cursors: from memory once the
    watch was read (the engine writes them itself, fenced by the lease), else from the database."""
    now = eng.clock.time()
    if watch.name not in eng._warm or now - eng._ambiguous_at >= SHARED_NAMES_EVERY:
        rows: list[Run] = []
        stored: dict[str, dict[str, dict]] = {}
        with eng.sessions() as s:  # read, then let the connection go before taking the engine lock
            cold = watch.name not in eng._warm
            if cold:
                rows = list(s.scalars(select(Run).where(Run.watch == watch.name)))
                ids = [r.id for r in rows]
                stored = {kind: runs_repo.cursors_for(s, kind, ids) for kind in watch.targets()}
            if now - eng._ambiguous_at >= SHARED_NAMES_EVERY:
                eng._ambiguous, eng._ambiguous_at = runs_repo.shared_display_names(s), now
        if cold:
            with eng._lock:  # what memory holds already is newer than what was read
                for r in rows:
                    eng.keep(r)
                for kind, by_run in stored.items():
                    mine = eng._cursors.setdefault(kind, {})
                    for run_id, cursor in by_run.items():
                        mine.setdefault(run_id, cursor)
                eng._warm.add(watch.name)
    # Without the lock (a batch may be writing): runs and cursors are replaced, never changed in place.
    rows = [r for i in eng.runs_of(watch.name) if (r := eng._runs.get(i)) is not None]
    known = {r.id: dict(r.labels or {}) for r in rows}
    names = {r.id: r.name for r in rows if r.name}
    cursors = {}
    for kind in watch.targets():
        mine = eng._cursors.get(kind, {})
        cursors[kind] = {r: dict(c) for r in known if (c := mine.get(r)) is not None}
    return known, names, cursors


def run(eng: Engine, s: Session, info: RunInfo, watch: str, now: float, writes: Writes) -> Run:
    """The run in memory (read once from the database if this process has not seen it yet); a run
    first seen now is written at once (the batch's other rows refer to it)."""
    run_id = info.run
    run = eng._runs.get(run_id)
    if run is None:
        run = s.get(Run, run_id)
        if run is not None:
            s.expunge(run)
        else:
            run = runs_repo.new_run(info, watch, now)
            runs_repo.upsert_runs(s, [run])
        run = eng.keep(run)
    writes.runs[run_id] = run
    return run


def page_facts(eng: Engine, run: Run, watch: Watch, stats: RunStats) -> dict:
    """What the pages show of a run beyond its stats: its kind (configured, or inferred from what
    it logged) and the figures of the rules its panels draw (a rule's own baseline)."""
    if watch.kind is not None:
        kind, how, evidence = watch.kind, "configured", []
    else:
        (kind, evidence), how = eng.layouts.infer(stats.seen), "inferred"
    run.kind = kind
    facts: dict = {"run_kind": {"name": kind, "how": how, "evidence": evidence}}
    drawn = eng._drawn
    if drawn:
        facts["figures"] = {
            rule.name: figures
            for rule, det in eng.evaluator.detectors(run.id)
            if rule.name in drawn and (figures := finite(det.stats()))
        }
    return facts


def finite(figures: Mapping[str, object]) -> dict[str, float]:
    return {k: float(v) for k, v in figures.items() if isinstance(v, int | float) and math.isfinite(v)}
