"""``build_report``: the report of a period, a pure function of what storage holds and of ``now``.

It reads the goodput ledger and the alert tables through ``monitor.storage`` (sums and bounded reads:
memory does not grow with the samples a run logged) and assembles ``model.Report``.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from monitor.reports import incidents_part as inc
from monitor.reports import paged
from monitor.reports.goodput_part import GpuSettings, hours_of, open_seconds, run_reports
from monitor.reports.model import BUCKETS, Blind, Hours, Incident, Period, Report, Silenced
from monitor.reports.period import previous, zone
from monitor.runs.goodput import Goodput
from monitor.storage import report_repo
from monitor.storage.models import Run

H = 3600.0


def build_report(
    s: Session,
    period: Period,
    *,
    now: float,
    tz: str = "UTC",
    watch: str | None = None,
    runs: list[str] | None = None,
    gpus: GpuSettings | None = None,
) -> Report:
    gpus = gpus or GpuSettings({}, {})
    tzinfo = zone(tz)
    prev = previous(period, tzinfo)
    chosen = report_repo.runs(s, watch, runs)
    reports, missing = run_reports(s, chosen, period, prev, now, gpus)
    ids = [r.run for r in reports]
    counts = {r.run: r.gpus for r in reports if r.gpus}
    events = inc.incidents(s, ids, period)
    alerts = report_repo.pages(s, ids, period.start, period.end)
    marked = paged.marked_noise(
        alerts, report_repo.ack_notes(s, alerts), report_repo.silences(s, period.start, period.end), period
    )
    page_list = inc.pages(alerts, events, period, counts, marked)
    ongoing = _ongoing([r for r in chosen if r.id in counts or r.id in ids], period, now, counts)
    incidents = inc.incident_list(events, ongoing, page_list, period, counts)
    totals = Hours(**{b: sum(getattr(r.hours, b) for r in reports) for b in BUCKETS})
    with_gpus = [r.gpu_hours for r in reports if r.gpu_hours is not None]
    gpu_totals = Hours(**{b: sum(getattr(g, b) for g in with_gpus) for b in BUCKETS}) if with_gpus else None
    return Report(
        period=period,
        previous=prev,
        generated_at=now,
        timezone=tzinfo.key,
        watch=watch,
        gpu_note=_gpu_note(reports),
        runs=reports,
        totals=totals,
        gpu_totals=gpu_totals,
        pages=page_list,
        paged=paged.fold(page_list, events, period, counts),
        costliest=inc.costliest(incidents),
        incidents=incidents,
        recurring=inc.recurring(s, page_list, events, period),
        quality=inc.quality(page_list),
        blind=_blind(s, chosen, period),
        silences=_silences(s, period),
        not_accounted=missing,
    )


def _ongoing(runs: list[Run], p: Period, now: float, gpus: dict[str, int]) -> list[Incident]:
    """Incidents still under way at the end of the period (a hang not over yet)."""
    out = []
    for run in runs:
        data = (run.stats or {}).get("goodput")
        if not data or p.end < now - 60:
            continue  # a past period: its incidents ended (or show as open at its end via the ledger)
        _, _, ongoing, _ = Goodput.from_dict(data).open_stretch(min(now, run.last_polled_at or now))
        if ongoing is None:
            continue
        lost = ongoing["seconds_lost"]
        inside = inc.lost_in(ongoing["start"], ongoing["start"] + lost, lost, p)
        n = gpus.get(run.id)
        out.append(
            Incident(
                run=run.id,
                kind=ongoing["kind"],
                start=ongoing["start"],
                end=min(now, p.end),
                step=ongoing["step"],
                steps_redone=0,
                lost_hours=inside / H,
                lost_gpu_hours=inside / H * n if n else None,
                whole_lost_hours=inc.whole_hours(lost, inside),
                rules=[],
            )
        )
    return out


def _gpu_note(reports: list) -> str:
    basis = {r.gpus_from for r in reports}
    if not reports:
        return "no run was watched in this period"
    if basis == {"setting"}:
        return "GPU-hours use the gpus: setting of each watch or run"
    if basis == {"fleet"}:
        return "GPU-hours use the number of GPUs each run's fleet metrics list"
    if basis == {"none"}:
        return "hours only: no run has a gpus: setting or fleet metrics, so no GPU-hours"
    none = [r.run for r in reports if r.gpus_from == "none"]
    text = "GPU-hours from the gpus: setting where set, else from the fleet's GPU count"
    return text + (f"; hours only for {', '.join(none)}" if none else "")


def _blind(s: Session, runs: list[Run], p: Period) -> list[Blind]:
    scopes = sorted({r.id for r in runs} | {r.watch for r in runs})
    total: dict[tuple[str, str], float] = {}
    for a in report_repo.blind_spans(s, scopes, p.start, p.end):
        a0 = max(p.start, a.fired_at or a.active_at)
        a1 = min(p.end, a.resolved_at if a.resolved_at is not None else p.end)
        if a1 <= a0:
            continue
        labels = a.labels or {}
        what = (
            labels.get("source")
            or labels.get("input")
            or ("its source" if a.rule == "source_unavailable" else "its inputs")
        )
        key = (a.run_id, str(what))
        total[key] = total.get(key, 0.0) + (a1 - a0)
    return [Blind(run=r, input=i, hours=sec / H) for (r, i), sec in sorted(total.items())]


def _silences(s: Session, p: Period) -> list[Silenced]:
    out = []
    for x in report_repo.silences(s, p.start, p.end):
        hours = (min(p.end, x.ends_at) - max(p.start, x.starts_at)) / H
        out.append(
            Silenced(
                matchers=list((x.matchers or {}).get("matchers", [])),
                created_by=x.created_by,
                comment=x.comment,
                hours=hours,
            )
        )
    return out


__all__ = ["GpuSettings", "build_report", "hours_of", "open_seconds"]
