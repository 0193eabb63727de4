"""The pictures of a report (inline SVG), with each run's headline metric (the loss; an RL run's reward,
as its run page shows) read from the stored, bounded series."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from markupsafe import Markup
from sqlalchemy.orm import Session

from monitor.reports import svg
from monitor.reports.model import Report
from monitor.rules.loader import load_layouts, pack_names
from monitor.storage import report_repo
from monitor.storage.models import Run

MAX_CURVES = 6  # loss curves: the runs with the costliest incidents first
AROUND = 8  # stored buckets at least, on each side of a costliest incident, however coarse the series


@dataclass
class Pictures:
    bars: Markup
    timeline: Markup
    curves: list[tuple[str, Markup]] = field(default_factory=list)  # (run, picture)
    costliest: list[Markup] = field(default_factory=list)  # one per costliest incident, around it


@cache
def _layouts():  # noqa: ANN202 - the packs' run kinds, read once
    return load_layouts(pack_names(), ())


def headline(s: Session, run: str) -> tuple[str, str]:
    """The metric a run's kind leads with (the packs' ``run_kind: headline``) and its label."""
    row = s.get(Run, run)
    return _layouts().headline(row.kind if row is not None else None)


def collect(s: Session, r: Report) -> Pictures:
    p = r.period
    order = list(dict.fromkeys([i.run for i in r.costliest] + [run.run for run in r.runs]))[:MAX_CURVES]
    curves = []
    for run in order:
        metric, label = headline(s, run)
        points = report_repo.curve(s, run, metric, p.start, p.end)
        incs = [i for i in r.incidents if i.run == run]
        paged = [i for i in r.paged if i.run == run]
        title = f"{r.name_of(run)}: {label.lower()}, incidents shaded" + (", pages dashed" if paged else "")
        picture = svg.loss_curve(points, incs, p.start, p.end, title, label=label.lower(), paged=paged)
        curves.append((run, picture))
    around = []
    for inc in r.costliest:
        metric, label = headline(s, inc.run)
        margin = max(3600.0, (inc.end - inc.start) * 0.5)
        buckets = report_repo.buckets_around(s, inc.run, metric, inc.start - margin, inc.end + margin, AROUND)
        around.append(svg.incident_curve(buckets, inc, margin, r.name_of(inc.run), label.lower(), r.timezone))
    return Pictures(bars=svg.goodput_bars(r), timeline=svg.timeline(r), curves=curves, costliest=around)
