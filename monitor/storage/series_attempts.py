"""Chart points of an earlier attempt: when a run rewinds (restarts from a checkpoint) and logs steps it
had logged already, the buckets of those steps as they stood are moved out of the live series into
``series_superseded`` before the redone points fold in, so the chart keeps the earlier attempt's points
(drawn greyed beside the redone ones) instead of folding both into one bucket at the newer time.

Moved aside by ``series.retire`` (in both fold paths: ``series.ingest_run`` and ``series_tails``), read
here. Kept per (run, metric) up to ``series.MAX_SUPERSEDED`` buckets, the oldest attempts dropped first,
as bounded as the live series."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.storage.attempt_models import SupersededBucket
from monitor.storage.series import BucketView


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
