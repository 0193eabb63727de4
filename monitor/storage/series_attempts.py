"""Chart points of an earlier attempt: when a run rewinds (restarts from a checkpoint) and logs steps it
had logged already, the buckets of those steps as they stood are moved out of the live series into
``series_superseded`` before the redone points fold in, so the chart keeps the earlier attempt's points
(drawn greyed beside the redone ones) instead of folding both into one bucket at the newer time.

Kept per (run, metric) up to ``MAX_SUPERSEDED`` buckets, the oldest attempts dropped first, as bounded as
the live series."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, func, insert, select, tuple_
from sqlalchemy.orm import Session

from monitor.storage.attempt_models import SupersededBucket
from monitor.storage.models import SeriesBucket
from monitor.storage.series import MAX_BUCKETS, BucketView, _Bucket

MAX_SUPERSEDED = MAX_BUCKETS


def retire(s: Session, run_id: str, metric: str, width: float, buckets: list[_Bucket], at: float) -> None:
    """Move ``buckets`` (of the live series) to the earlier attempts, as of the redone point at ``at``."""
    if not buckets:
        return
    sb = SeriesBucket
    s.execute(
        delete(sb).where(sb.run_id == run_id, sb.metric == metric, sb.x0.in_([b.x0 for b in buckets])),
        execution_options={"synchronize_session": False},
    )
    rows = [dict(b.row(), superseded_at=at, width=width) for b in buckets]
    s.execute(insert(SupersededBucket), rows)
    sup = SupersededBucket
    where = (sup.run_id == run_id, sup.metric == metric)
    kept = s.scalar(select(func.count()).select_from(sup).where(*where)) or 0
    if kept > MAX_SUPERSEDED:
        oldest = list(
            s.execute(
                select(sup.superseded_at, sup.x0)
                .where(*where)
                .order_by(sup.superseded_at, sup.x0)
                .limit(kept - MAX_SUPERSEDED)
            )
        )
        s.execute(
            delete(sup).where(*where, tuple_(sup.superseded_at, sup.x0).in_([tuple(r) for r in oldest])),
            execution_options={"synchronize_session": False},
        )


def read(s: Session, run_id: str, metrics: Iterable[str]) -> dict[str, list[BucketView]]:
    """metric -> the earlier attempts' buckets, oldest attempt first, by x."""
    sup = SupersededBucket
    out: dict[str, list[BucketView]] = {}
    rows = s.execute(
        select(sup.metric, sup.x0, sup.width, sup.min, sup.max, sup.sum, sup.count, sup.last, sup.nonfinite)
        .add_columns(sup.t_last)
        .where(sup.run_id == run_id, sup.metric.in_(list(metrics)))
        .order_by(sup.metric, sup.superseded_at, sup.x0)
    )
    for metric, x0, width, lo, hi, total, n, last, nonfinite, t_last in rows:
        mean = (total / n) if n else None
        out.setdefault(metric, []).append(
            BucketView(x0, x0 + width, lo, hi, mean, last, n, nonfinite, t_last)
        )
    return out
