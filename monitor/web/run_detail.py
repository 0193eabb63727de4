"""One run's whole story: summary, series (min and max per bucket), restarts, alert timeline."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sqlalchemy.orm import Session

from alerts.clock import isoformat
from monitor.storage import runs_repo, views
from monitor.storage.models import Run
from monitor.storage.series import BucketView
from monitor.web import status
from monitor.web.context import ApiContext
from monitor.web.schemas import Bucket, PanelOut, RunDetail, Series, TimelineEntry
from monitor.web.stats_cache import derive

MAX_POINTS = 512


def _pick(values: list[float | None], fn) -> float | None:  # noqa: ANN001
    present = [v for v in values if v is not None]
    return fn(present) if present else None


def downsample(buckets: Sequence[BucketView], max_points: int) -> list[Bucket]:
    """At most ``max_points`` buckets, merging neighbours; min and max survive, so a spike does."""
    k = max(1, math.ceil(len(buckets) / max(1, max_points)))
    out = []
    for i in range(0, len(buckets), k):
        group = buckets[i : i + k]
        count = sum(b.count for b in group)
        total = sum(b.mean * b.count for b in group if b.mean is not None)
        out.append(
            Bucket(
                x0=group[0].x0,
                x1=group[-1].x1,
                min=_pick([b.min for b in group], min),
                max=_pick([b.max for b in group], max),
                mean=(total / count) if count else None,
                last=next((b.last for b in reversed(group) if b.last is not None), None),
                count=count,
                nonfinite=sum(b.nonfinite for b in group),
                t=_pick([b.t for b in group], max),
            )
        )
    return out


def timeline(s: Session, run_id: str, limit: int) -> list[TimelineEntry]:
    return [
        TimelineEntry(
            at=isoformat(t.at) or "",
            alert_id=t.alert_id,
            rule=t.rule,
            severity=t.severity,
            from_state=t.from_state,
            to_state=t.to_state,
            reason=t.reason,
            value=status.num(t.value),
            step=t.step,
        )
        for t in views.run_timeline(s, run_id, limit)
    ]


def run_detail(
    ctx: ApiContext,
    s: Session,
    run: Run,
    *,
    metrics: Sequence[str] | None = None,
    max_points: int = MAX_POINTS,
    timeline_limit: int = 300,
) -> RunDetail:
    now = ctx.now()
    silences = views.active_silence_specs(s, now, ctx.silences)
    derived = derive(run, run.stats, now)
    shared = bool(run.display_name) and run.display_name in runs_repo.shared_display_names(
        s, [run.display_name]
    )
    kind = status.kind_fields(run, derived.stats, ctx.layouts, shared)
    alerts = sorted(
        (status.alert_out(a, silences, now, {run.id: kind["title"]}) for a in views.active_alerts(s, run.id)),
        key=status.alert_order,
    )
    report = derived.report
    fields = status.run_fields(run, derived.stats, alerts, report, now, ctx.poll_interval(run.watch))
    goodput = status.goodput_detail(report, views.alert_spans(s, run.id))
    stored = views.run_series(s, run.id, metrics)
    earlier = views.earlier_attempts(s, run.id, stored)
    series = {
        name: Series(
            axis="time" if axis == "time" else "step",
            buckets=downsample(buckets, max_points),
            earlier=downsample(earlier.get(name, []), max_points),
        )
        for name, (axis, buckets) in stored.items()
    }
    restarts = [i for i in (goodput.incidents if goodput else []) if i.kind in ("restart", "down")]
    panels = [
        PanelOut(id=p.id, title=p.title, unit=p.unit, metrics=p.metrics())
        for p in ctx.layouts.panels_for(kind["kind"])
    ]
    return RunDetail(
        **fields,
        **kind,
        panels=panels,
        goodput=goodput,
        series=series,
        restart_incidents=restarts,
        timeline=timeline(s, run.id, timeline_limit),
        alerts=alerts,
        sources=[p for p in (run.stats or {}).get("sources") or [] if isinstance(p, dict)],
    )
