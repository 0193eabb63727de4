"""What a report reads besides the goodput ledger (``goodput_repo``): the period's pages, blind spans,
silences, GPU counts, progress and the loss curve. Every query is bounded by the period (an index on
time or run) and aggregates or reads the stored, already bounded series: nothing grows with samples."""

from __future__ import annotations

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from monitor.storage.attempt_models import SupersededBucket
from monitor.storage.models import Alert, FleetRaster, Run, SeriesBucket, SeriesMeta, Silence
from monitor.storage.people_models import AuditEvent

BLIND_RULES = ("watching_blind", "source_unavailable", "source_down", "write_failing")


def runs(s: Session, watch: str | None, run_ids: list[str] | None) -> list[Run]:
    q = select(Run)
    if watch is not None:
        q = q.where(Run.watch == watch)
    if run_ids:
        q = q.where(or_(Run.id.in_(run_ids), Run.name.in_(run_ids)))
    return list(s.scalars(q.order_by(Run.watch, Run.id)))


def pages(s: Session, run_ids: list[str], start: float, end: float) -> list[Alert]:
    """Alerts of these runs that fired in ``[start, end)`` (herowatch's own blindness alerts apart)."""
    if not run_ids:
        return []
    q = select(Alert).where(
        Alert.run_id.in_(run_ids),
        Alert.fired_at.is_not(None),
        Alert.fired_at >= start,
        Alert.fired_at < end,
        Alert.rule.not_in(BLIND_RULES),
    )
    return list(s.scalars(q.order_by(Alert.fired_at, Alert.id)))


def blind_spans(s: Session, scopes: list[str], start: float, end: float) -> list[Alert]:
    """herowatch's own blindness alerts (per run, or per watch for a source) overlapping the period."""
    if not scopes:
        return []
    q = select(Alert).where(
        Alert.run_id.in_(scopes),
        Alert.rule.in_(BLIND_RULES),
        Alert.fired_at.is_not(None),
        Alert.fired_at < end,
        or_(Alert.resolved_at.is_(None), Alert.resolved_at > start),
    )
    return list(s.scalars(q.order_by(Alert.fired_at)))


def silences(s: Session, start: float, end: float) -> list[Silence]:
    q = select(Silence).where(Silence.starts_at < end, Silence.ends_at > start)
    return list(s.scalars(q.order_by(Silence.starts_at).limit(200)))


def fleet_gpus(s: Session, run_ids: list[str]) -> dict[str, int]:
    """run -> the most GPUs any of its fleet metrics lists (members with a device)."""
    out: dict[str, int] = {}
    if not run_ids:
        return out
    q = select(FleetRaster.run_id, FleetRaster.members).where(
        FleetRaster.run_id.in_(run_ids), FleetRaster.device_word.is_not(None)
    )
    for run_id, members in s.execute(q):
        out[run_id] = max(out.get(run_id, 0), len(members or []))
    return out


def step_reached(
    s: Session, run_ids: list[str], metric: str, before: float, first: bool = False
) -> dict[str, float]:
    """run -> the highest step of ``metric`` (a step-axis series) logged before ``before`` (``first``:
    the lowest)."""
    if not run_ids:
        return {}
    q = (
        select(SeriesBucket.run_id, (func.min if first else func.max)(SeriesBucket.x0))
        .join(
            SeriesMeta,
            and_(SeriesMeta.run_id == SeriesBucket.run_id, SeriesMeta.metric == SeriesBucket.metric),
        )
        .where(
            SeriesBucket.run_id.in_(run_ids),
            SeriesBucket.metric == metric,
            SeriesMeta.axis == "step",
            SeriesBucket.t_last < before,
        )
        .group_by(SeriesBucket.run_id)
    )
    return {r: float(x) for r, x in s.execute(q) if x is not None}


def mean_in(s: Session, run_ids: list[str], metric: str, start: float, end: float) -> dict[str, float]:
    """run -> the mean of ``metric`` over the buckets last written in ``[start, end)``."""
    if not run_ids:
        return {}
    q = (
        select(SeriesBucket.run_id, func.sum(SeriesBucket.sum), func.sum(SeriesBucket.count))
        .where(
            SeriesBucket.run_id.in_(run_ids),
            SeriesBucket.metric == metric,
            SeriesBucket.t_last >= start,
            SeriesBucket.t_last < end,
        )
        .group_by(SeriesBucket.run_id)
    )
    return {r: float(total) / n for r, total, n in s.execute(q) if n}


def curve(s: Session, run_id: str, metric: str, start: float, end: float) -> list[tuple[float, float]]:
    """(time, mean) of the stored buckets of ``metric`` last written in ``[start, end)``, in time order,
    the points of steps a rewind redid as first logged included (``series_superseded``)."""
    rows = []
    for sb in (SeriesBucket, SupersededBucket):
        rows += s.execute(
            select(sb.t_last, sb.sum, sb.count)
            .where(
                sb.run_id == run_id, sb.metric == metric, sb.t_last >= start, sb.t_last < end, sb.count > 0
            )
            .order_by(sb.t_last)
            .limit(5000)
        )
    return [(float(t), float(total) / n) for t, total, n in sorted(rows, key=lambda r: r[0])[:5000]]


def ack_notes(s: Session, alerts: list[Alert]) -> dict[int, list[str]]:
    """alert id -> the comments people acknowledged it with (from the audit trail)."""
    out: dict[int, list[str]] = {}
    by_target = {f"alert {a.id}": a for a in alerts}
    if not by_target:
        return out
    q = select(AuditEvent.target, AuditEvent.detail).where(
        AuditEvent.action == "ack", AuditEvent.outcome == "done", AuditEvent.target.in_(list(by_target))
    )
    for target, detail in s.execute(q):
        a = by_target[target]
        out.setdefault(a.id, []).append(detail.removeprefix(f"{a.rule}:").strip())  # "rule: comment"
    return out


def buckets_around(
    s: Session, run_id: str, metric: str, start: float, end: float, each_side: int
) -> list[tuple[float, float, float, float]]:
    """(time, min, mean, max) of the stored buckets of ``metric`` last written in ``[start, end]``, and
    at least ``each_side`` buckets before ``start`` and after ``end`` (however far: a long run's series
    is coarse, and a picture of two points is no picture), in time order; the points of steps a rewind
    redid as first logged included (``series_superseded``: the run before a hang it restarted from)."""
    before: list = []
    inside: list = []
    after: list = []
    for sb in (SeriesBucket, SupersededBucket):
        cols = (sb.t_last, sb.min, sb.sum, sb.count, sb.max)
        mine = (sb.run_id == run_id, sb.metric == metric, sb.count > 0, sb.t_last.is_not(None))
        before += s.execute(
            select(*cols).where(*mine, sb.t_last < start).order_by(sb.t_last.desc()).limit(each_side)
        )
        inside += s.execute(
            select(*cols).where(*mine, sb.t_last >= start, sb.t_last <= end).order_by(sb.t_last).limit(2000)
        )
        after += s.execute(select(*cols).where(*mine, sb.t_last > end).order_by(sb.t_last).limit(each_side))
    before = sorted(before, key=lambda r: r[0])[-each_side:] if each_side else []
    after = sorted(after, key=lambda r: r[0])[:each_side]
    rows = sorted([*before, *inside, *after], key=lambda r: r[0])
    return [(float(t), float(lo), float(total) / n, float(hi)) for t, lo, total, n, hi in rows]
