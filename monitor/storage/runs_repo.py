"""Runs and source cursors: what the engine writes after each poll, and reads to resume."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.run_ids import title
from monitor.samples import RunInfo, Sample
from monitor.storage import bulk
from monitor.storage.models import Run, SourceCursor
from monitor.storage.series import ingest_run
from monitor.storage.tail_columns import Points

RUN_COLUMNS = tuple(c.name for c in Run.__table__.columns)
_run_row = attrgetter(*RUN_COLUMNS)  # a run's row as a tuple


def new_run(info: RunInfo, watch: str, now: float) -> Run:
    """A run first seen now (not yet in any session): its row is written by :func:`upsert_runs`."""
    run = Run(id=info.run, watch=watch, source=info.source, first_seen_at=now, labels={}, restarts=0)
    for col in ("name", "project", "kind", "display_name", "url", "state", "last_step", "last_step_at"):
        setattr(run, col, None)
    run.last_seen_at = run.last_polled_at = run.source_error = None
    run.stats = {}
    return apply_info(run, info, watch)


def upsert_run(session: Session, info: RunInfo, watch: str, now: float) -> Run:
    run = session.get(Run, info.run)
    if run is None:
        run = Run(id=info.run, watch=watch, source=info.source, first_seen_at=now, labels={}, restarts=0)
        session.add(run)
    return apply_info(run, info, watch)


def apply_info(run: Run, info: RunInfo, watch: str) -> Run:
    """What a source says of a run, onto the run (in memory)."""
    run.watch = watch
    if info.name:
        run.name = info.name
    if info.project:
        run.project = info.project
    if info.display_name:
        run.display_name = info.display_name
    if info.url:
        run.url = info.url
    if info.state:
        run.state = info.state
    if info.labels:
        run.labels = {**(run.labels or {}), **dict(info.labels)}
    return run


def upsert_runs(session: Session, runs: Iterable[Run]) -> None:
    """Write these runs' rows (held in memory by the engine) in one multi-row upsert."""
    rows = list(map(_run_row, runs))
    update = [c for c in RUN_COLUMNS if c not in ("id", "first_seen_at")]
    bulk.upsert(session, Run.__table__, rows, ("id",), update, columns=RUN_COLUMNS)


def upsert_cursors(session: Session, rows: Iterable[tuple[str, str, Mapping[str, Any]]], now: float) -> None:
    """(run, source, cursor) rows in one multi-row upsert."""
    out = [{"run_id": r, "source": k, "cursor": dict(c), "updated_at": now} for r, k, c in rows]
    bulk.upsert(session, SourceCursor.__table__, out, ("run_id", "source"), ("cursor", "updated_at"))


def cursors_for(
    session: Session, source: str, run_ids: Iterable[str] | None = None
) -> dict[str, dict[str, Any]]:
    q = select(SourceCursor).where(SourceCursor.source == source)
    if run_ids is not None:
        q = q.where(SourceCursor.run_id.in_(list(run_ids)))
    return {c.run_id: dict(c.cursor or {}) for c in session.scalars(q)}


def save_cursors(session: Session, source: str, cursors: Mapping[str, Mapping[str, Any]], now: float) -> None:
    for run_id, cursor in cursors.items():
        row = session.get(SourceCursor, (run_id, source))
        if row is None:
            session.add(SourceCursor(run_id=run_id, source=source, cursor=dict(cursor), updated_at=now))
        else:
            row.cursor, row.updated_at = dict(cursor), now


def record_samples(session: Session, run: Run, samples: Iterable[Sample]) -> None:
    """Fold samples into the run's summary (step, state, last seen, restarts) and its chart series."""
    ingest_run(session, run.id, fold_samples(run, samples))


def fold_samples(run: Run, samples: Iterable[Sample]) -> dict[str, tuple[str, Points]]:
    """Fold samples into the run's summary (in memory); return their chart points by metric, as
    columns (``Points``: three lists a series, no object a point)."""
    by_metric: dict[tuple[str, str], tuple[list, list, list]] = {}
    # The row's fields as locals (each read or write of a mapped attribute goes through SQLAlchemy)
    seen_at, state, restarts = run.last_seen_at, run.state, run.restarts
    last_step, last_step_at = run.last_step, run.last_step_at
    for s in samples:
        t, step = s.t, s.step
        if seen_at is None or t > seen_at:
            seen_at = t
        if s.state:
            state = s.state
        if step is not None:
            if last_step is not None and step < last_step:
                # A rewind is a restart only when the lower step came later; an older row read again is not.
                if last_step_at is None or t > last_step_at:
                    restarts = (restarts or 0) + 1
                    last_step, last_step_at = step, t
            elif last_step is None or step > last_step:
                last_step, last_step_at = step, t
            axis, x = "step", float(step)
        else:
            axis, x = "time", t
        for name, value in s.metrics.items():
            if name.startswith("_"):
                continue
            if type(value) is float:  # the common case: taken as it is
                number = value
            elif isinstance(value, bool) or not isinstance(value, int | float):
                continue  # a source that sent text or a flag: not a metric value, never a failed poll
            else:
                try:
                    number = float(value)
                except OverflowError:
                    number = math.inf if value > 0 else -math.inf
            cols = by_metric.get((name, axis))
            if cols is None:
                cols = by_metric[(name, axis)] = ([], [], [])
            xs, vs, ts = cols
            xs.append(x)
            vs.append(number)
            ts.append(t)
    if seen_at != run.last_seen_at:
        run.last_seen_at = seen_at
    if state != run.state:
        run.state = state
    if restarts != run.restarts:
        run.restarts = restarts
    if last_step != run.last_step or last_step_at != run.last_step_at:
        run.last_step, run.last_step_at = last_step, last_step_at
    return {name: (axis, Points(*cols)) for (name, axis), cols in by_metric.items()}


def runs_of_watch(session: Session, watch: str) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.watch == watch).order_by(Run.id)))


def list_runs(session: Session) -> list[Run]:
    return list(session.scalars(select(Run).order_by(Run.id)))


def shared_display_names(session: Session, among: Iterable[str] | None = None) -> frozenset[str]:
    """Display names more than one run has (those runs are shown with their project); only those
    ``among`` these names, if given."""
    q = select(Run.display_name).group_by(Run.display_name).having(func.count() > 1)
    if among is not None:
        q = q.where(Run.display_name.in_(list(among)))
    return frozenset(n for n in session.scalars(q) if n)


def titles(session: Session, ids: Iterable[str]) -> dict[str, str]:
    """run id -> what people call the run (monitor.run_ids.title), for the runs that exist."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {}
    rows = session.execute(
        select(Run.id, Run.display_name, Run.name, Run.project).where(Run.id.in_(ids))
    ).all()
    shared = shared_display_names(session, {r.display_name for r in rows if r.display_name})
    return {r.id: title(r.display_name, r.name, r.project, r.display_name in shared) for r in rows}
