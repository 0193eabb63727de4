"""The picture a notification carries for its lead alert, from the stored chart series. Each rule kind
says what its picture shows (``Detector.plot``): its metric around the event, or the run's progress
(step against time) with the stall shaded and the limit drawn as a time span."""

from __future__ import annotations

from sqlalchemy.orm import Session

from alerts.durations import format_duration
from alerts.views import Plot
from monitor.rules.kinds import DETECTORS
from monitor.storage import runs_repo, series
from monitor.storage.models import Alert

POINTS = 300


def plot_for(s: Session, alert: Alert, now: float, run_title: str | None = None) -> Plot | None:
    """``run_title``: what people call the run, when the caller knows it already (else read)."""
    cls = DETECTORS.get(alert.kind)
    what = cls.plot if cls is not None else "none"
    if what == "none":
        return None
    run = run_title or runs_repo.titles(s, [alert.run_id]).get(alert.run_id, alert.run_id)
    if what == "progress":
        return _progress(s, alert, now, run)
    if what == "metric":
        return _metric(s, alert, run)
    return None


def _metric(s: Session, alert: Alert, run: str) -> Plot | None:
    metric = alert.metric
    if not metric:
        return None
    axis, buckets = series.read_series(s, alert.run_id, metric)
    buckets = buckets[-POINTS:]
    if not buckets:
        return None
    where = f"{axis} {alert.step}" if alert.step is not None and axis == "step" else "the alert"
    caption = f"{metric} of run {run} by {axis}, min..max per bucket, around {where}"
    if alert.threshold is not None:
        caption += f"; the threshold {alert.threshold:.4g} as a dashed red line"
    return Plot(
        kind="metric",
        title=f"{metric} · run {run}",
        caption=caption + "; the alert in orange.",
        x=[b.x0 for b in buckets],
        y=[b.max for b in buckets],
        y_min=[b.min for b in buckets],
        axis="time" if axis == "time" else "step",
        y_label=metric,
        event_x=float(alert.step) if alert.step is not None and axis == "step" else alert.fired_at,
        threshold=alert.threshold,
    )


def _progress(s: Session, alert: Alert, now: float, run: str) -> Plot | None:
    """Step against time, from any of the run's step-indexed series (each bucket knows when its last
    step was logged)."""
    points = series.progress_points(s, alert.run_id)
    if not points:
        return None
    points.sort()
    points = points[-POINTS:]
    last_t = points[-1][0]
    if alert.step is not None and alert.step >= points[-1][1]:  # the bucket's last step, exactly
        points[-1] = (last_t, float(alert.step))
    end = alert.resolved_at or now
    shade = (last_t, end) if end > last_t else None
    limit = alert.threshold if alert.kind in ("stall", "telemetry_gone") else None
    caption = f"Step reached by run {run} against time (UTC)"
    if shade is not None:
        caption += f"; no new step for {format_duration(shade[1] - shade[0])}, shaded red"
    if limit is not None:
        caption += f"; the limit ({format_duration(limit)} after the last step) as a dashed red line"
    return Plot(
        kind="progress",
        title=f"progress · run {run}",
        caption=caption + ".",
        x=[t for t, _ in points],
        y=[step for _, step in points],
        axis="time",
        y_label="step",
        shade=shade,
        limit=limit,
    )
