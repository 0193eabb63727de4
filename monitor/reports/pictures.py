"""The pictures of a report (inline SVG), with the loss curves read from the stored, bounded series."""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup
from sqlalchemy.orm import Session

from monitor.reports import svg
from monitor.reports.goodput_part import STEP_METRIC
from monitor.reports.model import Report
from monitor.storage import report_repo

MAX_CURVES = 6  # loss curves: the runs with the costliest incidents first


@dataclass
class Pictures:
    bars: Markup
    timeline: Markup
    curves: list[tuple[str, Markup]] = field(default_factory=list)  # (run, picture)
    costliest: list[Markup] = field(default_factory=list)  # one per costliest incident, around it


def collect(s: Session, r: Report) -> Pictures:
    p = r.period
    order = list(dict.fromkeys([i.run for i in r.costliest] + [run.run for run in r.runs]))[:MAX_CURVES]
    curves = []
    for run in order:
        points = report_repo.curve(s, run, STEP_METRIC, p.start, p.end)
        incs = [i for i in r.incidents if i.run == run]
        curves.append(
            (run, svg.loss_curve(points, incs, p.start, p.end, f"{run}: {STEP_METRIC}, incidents shaded"))
        )
    around = []
    for inc in r.costliest:
        a = inc.start - max(3600.0, (inc.end - inc.start) * 0.5)
        b = inc.end + max(3600.0, (inc.end - inc.start) * 0.5)
        points = report_repo.curve(s, inc.run, STEP_METRIC, a, b)
        title = f"{inc.run}: {inc.kind}, {STEP_METRIC} around it"
        around.append(svg.loss_curve(points, [inc], a, b, title, width=600))
    return Pictures(bars=svg.goodput_bars(r), timeline=svg.timeline(r), curves=curves, costliest=around)
