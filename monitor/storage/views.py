"""Read-only queries for the status API and the dashboard. Nothing here writes.

Each function takes an open session and returns rows or plain values; the API turns them into its
response models. Queries are batched per page (one for runs, one for active alerts, one for
silences, one for the series of the runs on a page) so a page costs the same few round trips
whatever the number of runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, defer

from alerts.model import AlertState
from alerts.silences import CompiledSilences, SilenceSpec, StoredSilence
from monitor.storage import series_attempts
from monitor.storage.models import Alert, AlertTransition, Run, SeriesBucket, SeriesMeta, Silence
from monitor.storage.series import BucketView, metrics_of, read_series

ACTIVE_STATES = (AlertState.PENDING, AlertState.FIRING)


def ping(session: Session) -> None:
    """Raises if the database cannot answer."""
    session.execute(text("SELECT 1"))


# ---- runs ---------------------------------------------------------------------------------------
def all_runs(session: Session, *, with_stats: bool = True) -> list[Run]:
    """Every run; ``with_stats=False`` leaves out the bulky ``stats`` JSON (see ``stats_of``)."""
    q = select(Run).order_by(Run.id)
    if not with_stats:
        q = q.options(defer(Run.stats, raiseload=True))
    return list(session.scalars(q))


def stats_of(session: Session, run_ids: list[str]) -> dict[str, dict]:
    """run -> its ``stats`` JSON, for several runs in one query per 500."""
    out: dict[str, dict] = {}
    for i in range(0, len(run_ids), 500):
        rows = session.execute(select(Run.id, Run.stats).where(Run.id.in_(run_ids[i : i + 500])))
        out.update({rid: stats or {} for rid, stats in rows})
    return out


def get_run(session: Session, run_id: str) -> Run | None:
    return session.get(Run, run_id)


def lookup_runs(session: Session, key: str) -> list[Run]:
    """The run with id ``key``; else every run whose display name, or own id at its source (a W&B id,
    a link from before ids were source-qualified), is ``key``: one, several (a shared name), or none."""
    run = session.get(Run, key)
    if run is not None:
        return [run]
    q = select(Run).where((Run.display_name == key) | (Run.name == key)).order_by(Run.id).limit(50)
    return list(session.scalars(q))


# ---- alerts -------------------------------------------------------------------------------------
def active_alerts(session: Session, run: str | None = None) -> list[Alert]:
    q = select(Alert).where(Alert.state.in_(ACTIVE_STATES))
    if run is not None:
        q = q.where(Alert.run_id == run)
    return list(session.scalars(q.order_by(Alert.id)))


def find_alerts(
    session: Session,
    *,
    state: str | None = None,
    severity: str | None = None,
    run: str | Sequence[str] | None = None,
    acknowledged: bool | None = None,
) -> Iterator[Alert]:
    """Alerts newest first, filtered in SQL; streamed so a caller filtering further can stop early.
    ``run``: a run id, or several (the runs a display name stands for)."""
    q = select(Alert)
    if state == "active":
        q = q.where(Alert.state.in_(ACTIVE_STATES))
    elif state:
        q = q.where(Alert.state == state)
    if severity:
        q = q.where(Alert.severity == severity)
    if isinstance(run, str) and run:
        q = q.where(Alert.run_id == run)
    elif run is not None and not isinstance(run, str):
        q = q.where(Alert.run_id.in_(list(run)))
    if acknowledged is True:
        q = q.where(Alert.acked_at.is_not(None))
    elif acknowledged is False:
        q = q.where(Alert.acked_at.is_(None))
    q = q.order_by(Alert.updated_at.desc(), Alert.id.desc()).execution_options(yield_per=500)
    yield from session.scalars(q)


def get_alert(session: Session, alert_id: int) -> Alert | None:
    return session.get(Alert, alert_id)


def alert_spans(session: Session, run_id: str) -> list[tuple[str, float, float | None]]:
    """(rule, fired_at, resolved_at) of every alert of a run that fired: for the goodput incidents."""
    rows = session.execute(
        select(Alert.rule, Alert.fired_at, Alert.resolved_at).where(
            Alert.run_id == run_id, Alert.fired_at.is_not(None)
        )
    )
    return [(r, a, b) for r, a, b in rows]


@dataclass(frozen=True)
class TimelineRow:
    at: float
    alert_id: int
    rule: str
    severity: str
    from_state: str
    to_state: str
    reason: str
    value: float | None
    step: int | None


def run_timeline(session: Session, run_id: str, limit: int = 300) -> list[TimelineRow]:
    """The run's alert transitions (the incident timeline), newest first."""
    q = (
        select(AlertTransition, Alert.rule, Alert.severity)
        .join(Alert, Alert.id == AlertTransition.alert_id)
        .where(AlertTransition.run_id == run_id)
        .order_by(AlertTransition.at.desc(), AlertTransition.id.desc())
        .limit(limit)
    )
    return [
        TimelineRow(
            tr.at, tr.alert_id, rule, severity, tr.from_state, tr.to_state, tr.reason or "", tr.value, tr.step
        )
        for tr, rule, severity in session.execute(q)
    ]


def alert_counts(session: Session, by: str = "run") -> list[tuple[str, str, str, int]]:
    """(run or rule, state, severity, count) of the active alerts, by run or by rule."""
    key = Alert.rule if by == "rule" else Alert.run_id
    q = (
        select(key, Alert.state, Alert.severity, func.count())
        .where(Alert.state.in_(ACTIVE_STATES))
        .group_by(key, Alert.state, Alert.severity)
    )
    return [(k, st, sev, n) for k, st, sev, n in session.execute(q)]


# ---- silences -----------------------------------------------------------------------------------
SilenceState = Literal["pending", "active", "expired"]  # not yet in force, in force, over


def silence_state(row: Silence, now: float) -> SilenceState:
    if now < row.starts_at:
        return "pending"
    return "active" if now < row.ends_at else "expired"


def list_silences(
    session: Session, now: float, state: SilenceState | None = None, limit: int = 500
) -> list[Silence]:
    """Silences, those still in force first (by end), then expired ones (newest end first)."""
    q = select(Silence)
    if state == "active":
        q = q.where(Silence.starts_at <= now, Silence.ends_at > now)
    elif state == "pending":
        q = q.where(Silence.starts_at > now)
    elif state == "expired":
        q = q.where(Silence.ends_at <= now)
    rows = list(session.scalars(q.order_by(Silence.ends_at.desc()).limit(limit)))
    live = sorted((r for r in rows if r.ends_at > now), key=lambda r: r.ends_at)
    return live + [r for r in rows if r.ends_at <= now]


def get_silence(session: Session, silence_id: int) -> Silence | None:
    return session.get(Silence, silence_id)


def matchers_of(row: Silence) -> list[str]:
    return [str(m) for m in (row.matchers or {}).get("matchers", [])]


def stored_silence(row: Silence) -> StoredSilence:
    return StoredSilence(
        row.id, tuple(matchers_of(row)), row.starts_at, row.ends_at, row.created_by, row.comment or ""
    )


def spec_of(row: Silence, compiled: CompiledSilences, now: float) -> SilenceSpec | None:
    """The silence's spec, its matchers compiled once while it is in force (``compiled`` keeps them)."""
    return compiled.spec(stored_silence(row), now)


def active_silence_specs(session: Session, now: float, compiled: CompiledSilences) -> list[SilenceSpec]:
    """The silences in force, compiled once each (those that ended are dropped from ``compiled``)."""
    rows = session.scalars(
        select(Silence).where(Silence.starts_at <= now, Silence.ends_at > now).order_by(Silence.id)
    )
    return compiled.in_force((stored_silence(row) for row in rows), now)


# ---- chart series -------------------------------------------------------------------------------
def run_series(
    session: Session, run_id: str, metrics: Iterable[str] | None = None
) -> dict[str, tuple[str, list[BucketView]]]:
    """metric -> (axis, buckets with min and max) for the run's stored, bounded series."""
    names = list(metrics) if metrics is not None else metrics_of(session, run_id)
    out = {}
    for name in names:
        axis, buckets = read_series(session, run_id, name)
        if buckets:
            out[name] = (axis, buckets)
    return out


def earlier_attempts(session: Session, run_id: str, metrics: Iterable[str]) -> dict[str, list[BucketView]]:
    """metric -> the buckets of steps a rewind redid, as their earlier attempt logged them."""
    return series_attempts.read(session, run_id, metrics)


def series_versions(session: Session, metric: str) -> dict[str, tuple[float | None, float]]:
    """run -> (its newest sample's time, the series' bucket width) of one metric: changes whenever the
    series does (a poll that folds points into it moves the run's newest sample; a compaction, the
    width). The series' own point count is written only every few polls (``series_tails``)."""
    rows = session.execute(
        select(SeriesMeta.run_id, Run.last_seen_at, SeriesMeta.width)
        .join(Run, Run.id == SeriesMeta.run_id)
        .where(SeriesMeta.metric == metric)
    )
    return {run: (seen, float(width)) for run, seen, width in rows}


def series_of_runs(
    session: Session, run_ids: list[str], metric: str
) -> dict[str, list[tuple[float, float | None, float | None]]]:
    """run -> [(x0, min, max)] of one metric for several runs in one query."""
    out: dict[str, list[tuple[float, float | None, float | None]]] = defaultdict(list)
    for chunk in (run_ids[i : i + 200] for i in range(0, len(run_ids), 200)):
        rows = session.execute(
            select(SeriesBucket.run_id, SeriesBucket.x0, SeriesBucket.min, SeriesBucket.max)
            .where(SeriesBucket.metric == metric, SeriesBucket.run_id.in_(chunk))
            .order_by(SeriesBucket.run_id, SeriesBucket.x0)
        )
        for run, x0, lo, hi in rows:
            out[run].append((x0, lo, hi))
    return dict(out)
